// The roofline chart, drawn with QPainter on log-log axes.
#include "ui/pool_panel/kv_roofline_chart.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

#include "ui/pool_view/kv_cell_colors.h"

using pagedchat::StepRecord;

namespace {

// Decades that hold [lo, hi], as powers of ten.
std::pair<double, double> decades(double lo, double hi) {
  return {std::floor(std::log10(std::max(lo, 1e-30))), std::ceil(std::log10(std::max(hi, 1e-30)))};
}

QString flopsText(double v) { return v >= 1e12 ? QStringLiteral("%1 T").arg(v / 1e12) : QStringLiteral("%1 G").arg(v / 1e9); }

}  // namespace

KvRooflineChart::KvRooflineChart(QWidget* parent) : QWidget(parent) { setObjectName(QStringLiteral("kvRooflineChart")); }

void KvRooflineChart::setCeilings(const pagedchat::RooflineCeilings& roof) {
  m_roof = roof;
  update();
}

void KvRooflineChart::clear() {
  m_points.clear();
  update();
}

void KvRooflineChart::addFrame(const PoolFrame& frame) {
  for (const StepRecord& st : frame.steps) {
    if (st.chunks.empty() || st.forward_seconds <= 0 || st.cost.bytes_read <= 0) continue;
    if (!m_points.isEmpty() && st.step_index <= m_points.back().step) m_points.clear();  // a new engine
    Point p;
    p.step = st.step_index;
    p.intensity = st.cost.intensity();
    p.flopsPerSecond = st.cost.flops / st.forward_seconds;
    p.tokens = st.num_tokens();
    bool prompt = false, decode = false;
    for (const StepRecord::Chunk& c : st.chunks) (c.is_decode ? decode : prompt) = true;
    p.kind = prompt && decode ? Point::Kind::mixed : decode ? Point::Kind::decode : Point::Kind::prompt;
    m_points.push_back(p);
  }
  if (m_points.size() > kMaxPoints) m_points.remove(0, m_points.size() - kMaxPoints);
  update();
}

void KvRooflineChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette& pal = palette();
  const KvCellColors colors = KvCellColors::fromPalette(pal);
  p.fillRect(rect(), pal.base());
  const QFontMetrics fm = fontMetrics();
  const bool measured = m_roof.ridge() > 0;

  // The axes' ranges: a decade either side of what is drawn.
  double xLo = 1, xHi = 1000, yLo = 1e9, yHi = 1e12;
  if (measured) {
    xLo = std::min(xLo, m_roof.ridge() / 30);
    xHi = std::max(xHi, m_roof.ridge() * 30);
    yHi = m_roof.peak_flops * 2;
    yLo = m_roof.attainable(xLo) / 2;
  }
  for (const Point& pt : m_points) {
    xLo = std::min(xLo, pt.intensity / 2), xHi = std::max(xHi, pt.intensity * 2);
    yLo = std::min(yLo, pt.flopsPerSecond / 2), yHi = std::max(yHi, pt.flopsPerSecond * 2);
  }
  const auto [x0, x1] = decades(xLo, xHi);
  const auto [y0, y1] = decades(yLo, yHi);
  // Room left for the y labels, and right for half of the last x label.
  const QRect plot = rect().adjusted(fm.horizontalAdvance(QStringLiteral("1000 G")) + 8, fm.height() + 4,
                                     -8 - fm.horizontalAdvance(QString::number(std::pow(10, x1), 'g', 6)) / 2,
                                     -2 * fm.height() - 8);
  if (plot.width() < 40 || plot.height() < 40) return;
  auto X = [&](double v) { return plot.left() + (std::log10(v) - x0) / (x1 - x0) * plot.width(); };
  auto Y = [&](double v) { return plot.bottom() - (std::log10(v) - y0) / (y1 - y0) * plot.height(); };

  // Grid and labels at each decade.
  QColor grid = pal.color(QPalette::Text);
  grid.setAlpha(40);
  p.setPen(grid);
  for (double d = x0; d <= x1; ++d) p.drawLine(QPointF(X(std::pow(10, d)), plot.top()), QPointF(X(std::pow(10, d)), plot.bottom()));
  for (double d = y0; d <= y1; ++d) p.drawLine(QPointF(plot.left(), Y(std::pow(10, d))), QPointF(plot.right(), Y(std::pow(10, d))));
  p.setPen(pal.color(QPalette::Text));
  for (double d = x0; d <= x1; ++d) {
    const QString t = QString::number(std::pow(10, d), 'g', 6);
    p.drawText(QPointF(X(std::pow(10, d)) - fm.horizontalAdvance(t) / 2.0, plot.bottom() + fm.ascent() + 3), t);
  }
  for (double d = y0; d <= y1; ++d) {
    const QString t = flopsText(std::pow(10, d));
    p.drawText(QPointF(plot.left() - fm.horizontalAdvance(t) - 4, Y(std::pow(10, d)) + fm.ascent() / 2.0), t);
  }
  p.drawText(QRectF(plot.left(), plot.bottom() + fm.height() + 4, plot.width(), fm.height()), Qt::AlignCenter,
             tr("FLOP per byte read (arithmetic intensity)"));
  p.drawText(QPointF(2, fm.ascent() + 1), tr("FLOP/s"));

  p.save();
  p.setClipRect(plot.adjusted(-2, -2, 2, 2));
  if (measured) {
    // The roof: the memory slope up to the ridge, then flat.
    QPen roofPen(pal.color(QPalette::Text), 2.5);
    p.setPen(roofPen);
    const double ridge = m_roof.ridge();
    p.drawLine(QPointF(X(std::pow(10, x0)), Y(m_roof.attainable(std::pow(10, x0)))), QPointF(X(ridge), Y(m_roof.peak_flops)));
    p.drawLine(QPointF(X(ridge), Y(m_roof.peak_flops)), QPointF(X(std::pow(10, x1)), Y(m_roof.peak_flops)));
    QPen dashed(pal.color(QPalette::Text), 1, Qt::DashLine);
    p.setPen(dashed);
    p.drawLine(QPointF(X(ridge), Y(m_roof.peak_flops)), QPointF(X(ridge), plot.bottom()));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QPointF(X(ridge) + 4, plot.bottom() - 4), tr("ridge %1").arg(ridge, 0, 'f', 0));
    p.drawText(QPointF(X(ridge) + 6, Y(m_roof.peak_flops) - 5),
               tr("compute: %1 GFLOP/s").arg(m_roof.peak_flops / 1e9, 0, 'f', 0));
    // The slope's label, along it, left of the ridge.
    const double lx = std::pow(10, x0 + 0.15 * (x1 - x0));
    p.save();
    const QPointF a(X(lx), Y(m_roof.attainable(lx))), b(X(ridge), Y(m_roof.peak_flops));
    p.translate(a);
    p.rotate(std::atan2(b.y() - a.y(), b.x() - a.x()) * 180.0 / M_PI);
    p.drawText(QPointF(4, -6), tr("memory: %1 GB/s").arg(m_roof.read_bandwidth / 1e9, 0, 'f', 1));
    p.restore();
  } else {
    p.drawText(plot, Qt::AlignCenter | Qt::TextWordWrap, tr("This machine's limits are not measured yet."));
  }

  // The steps: prompt, decode, both.
  auto color = [&](Point::Kind k) {
    return colors.flash(k == Point::Kind::prompt ? KvFlashKind::Allocate : k == Point::Kind::decode ? KvFlashKind::SwapOut
                                                                                                    : KvFlashKind::CopyOnWrite);
  };
  for (const Point& pt : m_points) {
    p.setPen(Qt::NoPen);
    p.setBrush(color(pt.kind));
    p.drawEllipse(QPointF(X(pt.intensity), Y(pt.flopsPerSecond)), 4.5, 4.5);
  }
  p.restore();
  if (!m_points.isEmpty()) {
    const Point& last = m_points.back();
    const QPointF c(X(last.intensity), Y(last.flopsPerSecond));
    p.setPen(QPen(pal.color(QPalette::Text), 2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(c, 8, 8);
    const QString tokens = last.tokens == 1 ? tr("1 token") : tr("%1 tokens").arg(last.tokens);
    const QString t = last.kind == Point::Kind::decode ? tr("step %1: decode, %2").arg(last.step).arg(tokens)
                                                       : tr("step %1: %2").arg(last.step).arg(tokens);
    const double tx = std::clamp(c.x() + 10, double(plot.left()), double(plot.right() - fm.horizontalAdvance(t)));
    p.drawText(QPointF(tx, c.y() + fm.height() + 6 < plot.bottom() ? c.y() + fm.height() + 6 : c.y() - 12), t);
  }
  // The key.
  int kx = plot.left() + 6;
  const int ky = plot.top() + 4;
  const std::pair<Point::Kind, QString> keys[] = {
      {Point::Kind::prompt, tr("prompt step")}, {Point::Kind::decode, tr("decode step")}, {Point::Kind::mixed, tr("both")}};
  for (const auto& [kind, label] : keys) {
    p.setPen(Qt::NoPen);
    p.setBrush(color(kind));
    p.drawEllipse(QPointF(kx + 5, ky + fm.height() / 2.0), 4.5, 4.5);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QPointF(kx + 13, ky + fm.ascent()), label);
    kx += 13 + fm.horizontalAdvance(label) + 12;
  }
}
