// The quantization lesson's chart (see quantization_chart.h).
#include "ui/lessons/quantization_chart.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace {
constexpr size_t kChannelsDrawn = 128;

QString sci(double v) { return QString::number(v, 'g', 2); }
}  // namespace

QuantizationChart::QuantizationChart(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("quantizationChart"));
  setMinimumHeight(60);
}

void QuantizationChart::setStudy(const QuantizationStudy::Result& result, int variantsShown) {
  m_result = result;
  m_shown = variantsShown;
  update();
}

int QuantizationChart::labelWidth(const QFontMetrics& fm) const {
  int w = 0;
  for (size_t v = 0; v < m_result->variants.size(); ++v) w = std::max(w, fm.horizontalAdvance(variantName(v)));
  return w + 10;
}

QColor QuantizationChart::variantColor(size_t variant) const {
  if (!m_result) return palette().color(QPalette::Mid);
  const auto& v = m_result->variants[variant];
  if (v.gptq) return QColor(0x2e, 0x9d, 0x57);        // green
  if (v.importance) return QColor(0xe0, 0x8a, 0x1e);  // orange
  return QColor(0x6b, 0x7f, 0xa8);                    // slate blue
}

QString QuantizationChart::variantName(size_t variant) const {
  const auto& v = m_result->variants[variant];
  const QString type = QString::fromLatin1(pagedchat::quantize::file_type_info(v.type).name.data());
  if (v.gptq) return tr("%1 GPTQ-style").arg(type);
  if (v.importance) return tr("%1 + importance").arg(type);
  return tr("%1 plain").arg(type);
}

void QuantizationChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  p.setPen(palette().color(QPalette::Text));
  if (!m_result) {
    p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
               tr("The quantization lesson draws here: Lessons > Quantizing weights, then Start."));
    return;
  }
  const QRect all = rect().adjusted(8, 6, -8, -6);
  const int h = all.height();
  paintChannels(p, QRect(all.left(), all.top(), all.width(), h * 44 / 100));
  paintErrors(p, QRect(all.left(), all.top() + h * 46 / 100, all.width(), h * 26 / 100));
  paintKl(p, QRect(all.left(), all.top() + h * 73 / 100, all.width(), h * 27 / 100));
}

void QuantizationChart::paintChannels(QPainter& p, const QRect& area) {
  const auto& pic = m_result->channels;
  const QFontMetrics fm = fontMetrics();
  if (pic.activation.empty()) return;
  const std::vector<size_t> order = pic.by_loudness();
  const size_t loud = pic.loud_count();
  // The loudest few channels are the story; past them the bars would be thinner than a pixel.
  const size_t drawn = std::min<size_t>(order.size(), kChannelsDrawn);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(area.left(), area.top() + fm.ascent(),
             tr("%1: the loudest %2 of its %3 input channels (mean square of the activation each meets, log scale)")
                 .arg(QString::fromStdString(pic.tensor))
                 .arg(drawn)
                 .arg(order.size()));
  const QRect plot = area.adjusted(fm.horizontalAdvance(QStringLiteral("1e-10")) + 6, fm.height() + 4, 0, -fm.height() - 2);
  if (plot.width() < 20 || plot.height() < 20) return;
  double hi = 0, lo = INFINITY;
  for (float a : pic.activation)
    if (a > 0) hi = std::max(hi, double(a)), lo = std::min(lo, double(a));
  if (!(hi > 0)) return;
  const double top = std::ceil(std::log10(hi)), bottom = std::floor(std::log10(std::max(lo, hi * 1e-8)));
  auto Y = [&](double v) {
    return plot.bottom() - (std::log10(std::max(v, std::pow(10.0, bottom))) - bottom) / (top - bottom) * plot.height();
  };
  // Axis: a line per decade, labelled where the labels have room.
  const int every = std::max(1, static_cast<int>(std::ceil(fm.height() * (top - bottom) / std::max(1, plot.height()))));
  for (double d = bottom; d <= top; d += 1) {
    const double y = Y(std::pow(10.0, d));
    p.setPen(palette().color(QPalette::Midlight));
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    if (static_cast<int>(d - bottom) % every != 0) continue;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(area.left(), y - fm.height() / 2.0, plot.left() - area.left() - 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("1e%1").arg(int(d)));
  }
  const double width = static_cast<double>(plot.width()) / static_cast<double>(drawn);
  for (size_t i = 0; i < drawn; ++i) {
    const double v = pic.activation[order[i]];
    const QColor c = i < loud ? QColor(0xd0, 0x3b, 0x3b) : QColor(0x8a, 0x8f, 0x98);
    p.fillRect(QRectF(plot.left() + i * width, Y(v), std::max(1.0, width * 0.8), plot.bottom() - Y(v)), c);
  }
  p.setPen(QColor(0xd0, 0x3b, 0x3b));
  p.drawText(plot.left(), plot.bottom() + fm.ascent() + 2,
             tr("red: the loudest %1 (1%), up to %2; the median channel's is %3, the quietest's %4")
                 .arg(loud)
                 .arg(sci(hi))
                 .arg(sci(pic.activation[order[order.size() / 2]]))
                 .arg(sci(lo)));
}

void QuantizationChart::paintErrors(QPainter& p, const QRect& area) {
  const auto& pic = m_result->channels;
  const QFontMetrics fm = fontMetrics();
  const size_t n = m_result->variants.size();
  p.setPen(palette().color(QPalette::Text));
  p.drawText(area.left(), area.top() + fm.ascent(), tr("Output error of %1 over the calibration text (log scale); red: the loudest channels' share")
                                                         .arg(QString::fromStdString(pic.tensor)));
  if (pic.cost.size() != n || n == 0) return;
  const size_t loud = pic.loud_count();
  std::vector<double> total(n, 0), loudPart(n, 0);
  for (size_t v = 0; v < n; ++v) {
    const auto e = pic.error_of(v);
    total[v] = e.total;
    loudPart[v] = e.loud;
  }
  double hi = 0, lo = INFINITY;
  for (double t : total)
    if (t > 0) hi = std::max(hi, t), lo = std::min(lo, t);
  if (!(hi > 0)) return;
  const double top = std::ceil(std::log10(hi)) + 0.0, bottom = std::floor(std::log10(lo)) - 1;
  const int labelW = labelWidth(fm);
  const QRect rows = area.adjusted(0, fm.height() + 4, 0, 0);
  const double rowH = static_cast<double>(rows.height()) / n;
  for (size_t v = 0; v < n; ++v) {
    const QRectF row(rows.left(), rows.top() + v * rowH, rows.width(), rowH);
    const bool shown = static_cast<int>(v) < m_shown;
    p.setPen(shown ? palette().color(QPalette::Text) : palette().color(QPalette::Mid));
    p.drawText(QRectF(row.left(), row.top(), labelW, row.height()), Qt::AlignVCenter | Qt::AlignLeft, variantName(v));
    const QRectF barArea(row.left() + labelW, row.top() + row.height() * 0.15, row.width() - labelW, row.height() * 0.7);
    if (!shown) {
      p.fillRect(barArea.adjusted(0, barArea.height() * 0.35, 0, -barArea.height() * 0.35), palette().color(QPalette::Midlight));
      continue;
    }
    const double frac = total[v] > 0 ? (std::log10(total[v]) - bottom) / (top - bottom) : 0;
    const double len = std::clamp(frac, 0.02, 1.0) * barArea.width() * 0.62;
    const double share = total[v] > 0 ? std::clamp(loudPart[v] / total[v], 0.0, 1.0) : 0;
    p.fillRect(QRectF(barArea.left(), barArea.top(), len * (1 - share), barArea.height()), variantColor(v));
    p.fillRect(QRectF(barArea.left() + len * (1 - share), barArea.top(), len * share, barArea.height()), QColor(0xd0, 0x3b, 0x3b));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(barArea.left() + len + 6, barArea.top(), barArea.width() - len - 6, barArea.height()), Qt::AlignVCenter,
               tr("%1, %2% in the loudest %3").arg(sci(total[v])).arg(100.0 * share, 0, 'f', 1).arg(loud));
  }
}

void QuantizationChart::paintKl(QPainter& p, const QRect& area) {
  const QFontMetrics fm = fontMetrics();
  const size_t n = m_result->variants.size();
  p.setPen(palette().color(QPalette::Text));
  const QString source = QString::fromStdString(m_result->source_type);
  const bool widened = source != QLatin1String("F16") && source != QLatin1String("BF16") && source != QLatin1String("F32");
  p.drawText(area.left(), area.top() + fm.ascent(),
             tr("KL from the original (%1, perplexity %2) on %3 held-out tokens")
                 .arg(widened ? tr("%1 widened to F16").arg(source) : source)
                 .arg(m_result->reference_perplexity, 0, 'f', 2)
                 .arg(m_result->positions));
  double hi = 0;
  for (const auto& v : m_result->variants) hi = std::max(hi, v.mean_kl);
  if (!(hi > 0) || n == 0) return;
  const int labelW = labelWidth(fm);
  const QRect rows = area.adjusted(0, fm.height() + 4, 0, 0);
  const double rowH = static_cast<double>(rows.height()) / n;
  for (size_t v = 0; v < n; ++v) {
    const auto& q = m_result->variants[v];
    const QRectF row(rows.left(), rows.top() + v * rowH, rows.width(), rowH);
    const bool shown = static_cast<int>(v) < m_shown;
    p.setPen(shown ? palette().color(QPalette::Text) : palette().color(QPalette::Mid));
    p.drawText(QRectF(row.left(), row.top(), labelW, row.height()), Qt::AlignVCenter | Qt::AlignLeft, variantName(v));
    const QRectF barArea(row.left() + labelW, row.top() + row.height() * 0.15, row.width() - labelW, row.height() * 0.7);
    if (!shown) {
      p.drawText(barArea, Qt::AlignVCenter, tr("Next event shows it"));
      continue;
    }
    const double len = q.mean_kl / hi * barArea.width() * 0.55;
    p.fillRect(QRectF(barArea.left(), barArea.top(), len, barArea.height()), variantColor(v));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(barArea.left() + len + 6, barArea.top(), barArea.width() - len - 6, barArea.height()), Qt::AlignVCenter,
               tr("KL %1 · top-1 %2% · perplexity %3").arg(q.mean_kl, 0, 'f', 3).arg(100.0 * q.top1, 0, 'f', 1).arg(q.perplexity, 0, 'f', 2));
  }
}
