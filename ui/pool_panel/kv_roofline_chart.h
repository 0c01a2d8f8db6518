#pragma once
// The roofline: this machine's two limits, measured (engine/bench/roofline.h), on log-log axes
// of arithmetic intensity (FLOP per byte read) against FLOP per second: the memory slope (read
// bandwidth x intensity) up to the ridge, the flat compute roof after it. Each engine step the
// frames carry is a dot at its own intensity and speed (engine/engine/step_cost.h): prompt
// steps to the right of the ridge, decode steps far to the left, under the slope. The newest
// step is ringed and named. Fed by PoolFrame::steps, as the step timeline is.

#include <QString>
#include <QVector>
#include <QWidget>

#include <cstdint>

#include "appcore/pool/pool_frame.h"
#include "engine/bench/roofline.h"

class KvRooflineChart : public QWidget {
  Q_OBJECT
 public:
  struct Point {
    int64_t step = 0;
    double intensity = 0;       // FLOP per byte
    double flopsPerSecond = 0;  // reached
    int tokens = 0;
    enum class Kind { prompt, decode, mixed } kind = Kind::prompt;
  };
  static constexpr int kMaxPoints = 400;

  explicit KvRooflineChart(QWidget* parent = nullptr);
  // Zero ceilings: not measured (yet); the dots are drawn on their own scale.
  void setCeilings(const pagedchat::RooflineCeilings& roof);
  const pagedchat::RooflineCeilings& ceilings() const { return m_roof; }
  void addFrame(const PoolFrame& frame);  // each timed step joins the dots
  void clear();
  const QVector<Point>& points() const { return m_points; }

  QSize sizeHint() const override { return {360, 240}; }
  QSize minimumSizeHint() const override { return {160, 60}; }  // as the step timeline: a short window keeps its size

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  pagedchat::RooflineCeilings m_roof;
  QVector<Point> m_points;
};
