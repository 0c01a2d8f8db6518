#pragma once
// The quantization lesson's chart (appcore/lessons/quantization_study.h): what the rounding
// costs and where. Top: one layer matrix's input channels, loudest first, each a bar of the
// mean square of the activation it meets (log scale), the loudest 1% in red: the few channels
// whose weights' errors cost the most. Middle: for each way shown so far (plain, importance
// matrix, GPTQ-style), that matrix's output error (log scale) and the loudest channels' share
// of it. Bottom: each way's KL from the original on the held-out text, with its top-1
// agreement and perplexity. Ways not yet shown wait as grey rows: each Next event fills one.

#include <QWidget>

#include "appcore/lessons/quantization_study.h"

class QuantizationChart : public QWidget {
  Q_OBJECT
 public:
  explicit QuantizationChart(QWidget* parent = nullptr);
  void setStudy(const QuantizationStudy::Result& result, int variantsShown);
  const QuantizationStudy::Result& result() const { return m_result; }
  int variantsShown() const { return m_shown; }

  QSize sizeHint() const override { return {420, 320}; }
  QSize minimumSizeHint() const override { return {160, 60}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void paintChannels(QPainter& p, const QRect& area);
  void paintErrors(QPainter& p, const QRect& area);
  void paintKl(QPainter& p, const QRect& area);
  QColor variantColor(size_t variant) const;
  QString variantName(size_t variant) const;
  int labelWidth(const QFontMetrics& fm) const;  // the widest variant's name, and a gap

  QuantizationStudy::Result m_result;
  int m_shown = 0;
};
