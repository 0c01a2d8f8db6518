// Contiguous slabs against paged blocks, per chat, on one scale.
#include "ui/pool_panel/kv_contiguous_strip.h"

#include <QPainter>

#include <algorithm>

#include "ui/pool_view/kv_cell_colors.h"

using namespace pagedchat;

KvContiguousStrip::KvContiguousStrip(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvContiguousStrip"));
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void KvContiguousStrip::setFrame(const PoolFrame& frame, const KvPoolNumbers& numbers) {
  m_numbers = numbers;
  const int before = static_cast<int>(m_layout.contiguous.size()) * 2 + m_layout.numWaiting;
  m_layout = computeLayoutComparison(frame);
  if (before != static_cast<int>(m_layout.contiguous.size()) * 2 + m_layout.numWaiting) updateGeometry();
  update();
}

QString KvContiguousStrip::contiguousText() const { return kvContiguousCaption(m_layout, m_numbers); }
QString KvContiguousStrip::pagedText() const { return kvPagedCaption(m_numbers); }

int KvContiguousStrip::captionHeight(int width, const QString& text) const {
  return fontMetrics().boundingRect(QRect(0, 0, std::max(width, 40), 10000), Qt::TextWordWrap, text).height();
}

namespace {
constexpr int kBarHeight = 16;
}

int KvContiguousStrip::heightForWidth(int width) const {
  return captionHeight(width, contiguousText()) + captionHeight(width, pagedText()) + 2 * kBarHeight + 10;
}

QSize KvContiguousStrip::sizeHint() const { return {240, heightForWidth(240)}; }
QSize KvContiguousStrip::minimumSizeHint() const { return {120, 2 * kBarHeight + 2 * fontMetrics().height() + 10}; }

void KvContiguousStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const KvCellColors colors = KvCellColors::fromPalette(palette());
  const QColor ink = palette().color(QPalette::WindowText);
  // One scale for both: the pool's slots, or the slabs when they reach past it.
  const int64_t scale = std::max<int64_t>({1, m_layout.capacity, m_layout.contiguousReserved, m_layout.pagedReserved});
  const int w = width() - 1;
  auto px = [&](int64_t n) { return static_cast<int>(w * static_cast<double>(n) / scale); };
  int y = 0;
  auto caption = [&](const QString& text) {
    const int h = captionHeight(width(), text);
    p.setPen(ink);
    p.drawText(QRect(0, y, width(), h), Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, text);
    y += h + 1;
  };
  auto bar = [&](const std::vector<KvLayoutSegment>& segments) {
    const QRect whole(0, y, w, kBarHeight);
    p.fillRect(whole, colors.background);
    int64_t at = 0;
    for (const KvLayoutSegment& s : segments) {
      const QColor chat = colors.chat(s.colorIndex);
      const QRect reserved(px(at), y + 1, std::max(1, px(at + s.reserved) - px(at)), kBarHeight - 2);
      QColor unused = chat;
      unused.setAlpha(70);
      p.fillRect(reserved, unused);  // set aside, nothing in it
      p.fillRect(QRect(reserved.left(), reserved.top(), std::max(s.used > 0 ? 1 : 0, px(at + s.used) - px(at)), reserved.height()), chat);
      if (!s.fits) {
        p.setPen(QPen(colors.flash(KvFlashKind::Preempt), 2, Qt::DashLine));
        p.drawRect(reserved.adjusted(1, 1, -1, -1));
      }
      p.setPen(colors.background);
      p.drawLine(reserved.topRight(), reserved.bottomRight());
      at += s.reserved;
    }
    // The pool's end, when the slabs run past it.
    if (m_layout.capacity < scale) {
      p.setPen(QPen(ink, 2));
      p.drawLine(px(m_layout.capacity), y - 2, px(m_layout.capacity), y + kBarHeight + 1);
    }
    p.setPen(colors.cachedOutline);
    p.drawRect(whole);
    y += kBarHeight + 4;
  };
  caption(contiguousText());
  bar(m_layout.contiguous);
  caption(pagedText());
  bar(m_layout.paged);
}
