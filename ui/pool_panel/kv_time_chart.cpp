// Used / cached / free blocks over the last minute, as stacked areas.
#include "ui/pool_panel/kv_time_chart.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

#include "ui/pool_view/kv_cell_colors.h"

KvTimeChart::KvTimeChart(QWidget* parent) : QWidget(parent) { setObjectName(QStringLiteral("kvTimeChart")); }

void KvTimeChart::addSample(qint64 nowMs, int used, int cached, int free) {
  // A pool of another size (the model reloaded with another pool): the old samples are drawn
  // against the new total no more; they were read as a full pool after the teaching preset.
  if (!m_samples.empty()) {
    const Sample& last = m_samples.back();
    if (last.used + last.cached + last.free != used + cached + free) m_samples.clear();
  }
  // The last sample is provisional until kBucketMs after the one before it: it shows the
  // latest numbers without a point per frame.
  if (m_samples.size() >= 2 && nowMs - m_samples[m_samples.size() - 2].ms < kBucketMs)
    m_samples.back() = {nowMs, used, cached, free};
  else
    m_samples.push_back({nowMs, used, cached, free});
  while (!m_samples.empty() && nowMs - m_samples.front().ms > kWindowMs) m_samples.pop_front();
  update();
}

void KvTimeChart::clear() {
  m_samples.clear();
  update();
}

void KvTimeChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const KvCellColors colors = KvCellColors::fromPalette(palette());
  const QRect frame = rect().adjusted(0, 0, -1, -1);
  p.fillRect(rect(), colors.free);
  const QFontMetrics fm(font());
  const QRect plot = frame.adjusted(1, fm.height() + 2, -1, -1);
  if (!m_samples.empty()) {
    const Sample& last = m_samples.back();
    const int total = std::max(1, last.used + last.cached + last.free);
    const qint64 t1 = last.ms, t0 = t1 - kWindowMs;
    auto x = [&](qint64 ms) { return plot.left() + plot.width() * static_cast<double>(ms - t0) / kWindowMs; };
    auto y = [&](int blocks) { return plot.bottom() - plot.height() * static_cast<double>(blocks) / total; };
    // Stacked from the bottom: used, then cached on top of it; free is the background.
    auto area = [&](auto top, auto bottom) {
      QPainterPath path;
      path.moveTo(x(m_samples.front().ms), y(bottom(m_samples.front())));
      for (const Sample& s : m_samples) path.lineTo(x(s.ms), y(top(s)));
      for (auto it = m_samples.rbegin(); it != m_samples.rend(); ++it) path.lineTo(x(it->ms), y(bottom(*it)));
      path.closeSubpath();
      return path;
    };
    p.setPen(Qt::NoPen);
    p.setBrush(colors.chat(0));
    p.drawPath(area([](const Sample& s) { return s.used; }, [](const Sample&) { return 0; }));
    p.setBrush(colors.cached);
    p.drawPath(area([](const Sample& s) { return s.used + s.cached; }, [](const Sample& s) { return s.used; }));
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(frame.adjusted(3, 1, -3, 0), Qt::AlignLeft | Qt::AlignTop,
               tr("used %1  cached %2  free %3  (last 60 s)").arg(last.used).arg(last.cached).arg(last.free));
  }
  p.setPen(colors.cachedOutline);
  p.setBrush(Qt::NoBrush);
  p.drawRect(frame);
}
