#pragma once
// A small chart of the block pool over the last minute: used, cached and free blocks as
// stacked areas, drawn with QPainter. Samples closer together than kBucketMs replace each
// other, so a frame rate of 60 Hz keeps about 300 points.

#include <QWidget>

#include <deque>

class KvTimeChart : public QWidget {
  Q_OBJECT
 public:
  static constexpr qint64 kWindowMs = 60'000;
  static constexpr qint64 kBucketMs = 200;

  struct Sample {
    qint64 ms = 0;
    int used = 0, cached = 0, free = 0;
  };

  explicit KvTimeChart(QWidget* parent = nullptr);
  // nowMs: any steady clock; samples older than kWindowMs before it are dropped, and all of them
  // when the pool's size (used + cached + free) is not the last sample's.
  void addSample(qint64 nowMs, int used, int cached, int free);
  const std::deque<Sample>& samples() const { return m_samples; }
  void clear();

  QSize sizeHint() const override { return {240, 90}; }
  QSize minimumSizeHint() const override { return {120, 60}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::deque<Sample> m_samples;
};
