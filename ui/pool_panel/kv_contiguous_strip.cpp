// Two bars: contiguous slabs against paged blocks.
#include "ui/pool_panel/kv_contiguous_strip.h"

#include <QPainter>

#include <algorithm>

#include "ui/pool_view/kv_cell_colors.h"

KvContiguousStrip::KvContiguousStrip(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvContiguousStrip"));
}

void KvContiguousStrip::setNumbers(const KvPoolNumbers& numbers) {
  m_numbers = numbers;
  update();
}

QString KvContiguousStrip::contiguousText() const {
  return tr("Contiguous: %1 tokens reserved, %2 wasted")
      .arg(m_numbers.contiguousReservedTokens)
      .arg(kvPercent(m_numbers.contiguousWaste));
}

QString KvContiguousStrip::pagedText() const {
  return tr("Paged: %1 slots in blocks, %2 stored, %3 wasted")
      .arg(m_numbers.pagedSlots)
      .arg(m_numbers.tokensStored)
      .arg(kvPercent(m_numbers.pagedWaste));
}

void KvContiguousStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const KvCellColors colors = KvCellColors::fromPalette(palette());
  const int64_t scale = std::max<int64_t>({1, m_numbers.contiguousReservedTokens, m_numbers.pagedSlots});
  const int rowH = height() / 2;
  auto bar = [&](int top, int64_t reserved, const QString& text) {
    const QRect whole(0, top + 1, width() - 1, rowH - 3);
    p.fillRect(whole, colors.background);
    const int w = static_cast<int>(whole.width() * static_cast<double>(reserved) / scale);
    const int used = static_cast<int>(whole.width() * static_cast<double>(std::min(reserved, m_numbers.tokensStored)) / scale);
    p.fillRect(QRect(whole.left(), whole.top(), w, whole.height()), colors.cached);  // reserved, unused
    p.fillRect(QRect(whole.left(), whole.top(), used, whole.height()), colors.chat(0));  // stored
    p.setPen(colors.cachedOutline);
    p.drawRect(whole);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(whole.adjusted(4, 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter, text);
  };
  bar(0, m_numbers.contiguousReservedTokens, contiguousText());
  bar(rowH, m_numbers.pagedSlots, pagedText());
}
