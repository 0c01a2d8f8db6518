// Contiguous slabs against paged blocks, per chat, on one scale.
#include "ui/pool_panel/kv_contiguous_strip.h"

#include <QPainter>

#include <algorithm>
#include <set>

#include "ui/pool_view/kv_cell_colors.h"

using namespace pagedchat;

KvLayoutComparison computeLayoutComparison(const PoolFrame& frame) {
  KvLayoutComparison c;
  const KvSnapshot& snap = frame.snapshot;
  c.capacity = static_cast<int64_t>(snap.blocks.size()) * snap.block_size;
  c.maxContext = frame.maxContext;
  c.slabsThatFit = c.maxContext > 0 ? static_cast<int>(c.capacity / c.maxContext) : 0;
  std::set<int32_t> counted;
  for (const PoolFrameSequence& s : frame.sequences) {
    KvLayoutSegment slab{s.id, s.chatTitle, s.colorIndex};
    // A contiguous slab holds every token of its own: a shared prefix is stored once per chat.
    slab.reserved = c.maxContext;
    slab.used = std::min<int64_t>(s.storedTokens(), c.maxContext);
    slab.fits = c.contiguousReserved + slab.reserved <= c.capacity;
    c.numWaiting += slab.fits ? 0 : 1;
    c.contiguousReserved += slab.reserved;
    c.contiguousUsed += slab.used;
    c.contiguous.push_back(slab);

    KvLayoutSegment blocks{s.id, s.chatTitle, s.colorIndex};
    for (int32_t b : s.blockTable) {
      if (b < 0 || b >= static_cast<int32_t>(snap.blocks.size())) continue;
      const KvBlockInfo& info = snap.blocks[static_cast<size_t>(b)];
      // A swapped chat's table names host blocks: it holds no device block.
      if (std::find(info.owners.begin(), info.owners.end(), s.id) == info.owners.end()) continue;
      if (!counted.insert(b).second) continue;
      blocks.reserved += snap.block_size;
      blocks.used += info.num_filled;
    }
    c.pagedReserved += blocks.reserved;
    c.pagedUsed += blocks.used;
    c.paged.push_back(blocks);
  }
  return c;
}

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

QString kvContiguousCaption(const KvLayoutComparison& layout, const KvPoolNumbers& numbers) {
  auto tr = [](const char* text) { return KvContiguousStrip::tr(text); };
  QString text = tr("Contiguous: %1 slabs of %2 = %3 tokens reserved, %4 stored, %5 wasted")
                     .arg(layout.contiguous.size())
                     .arg(layout.maxContext)
                     .arg(numbers.contiguousReservedTokens)
                     .arg(layout.contiguousUsed)
                     .arg(kvPercent(numbers.contiguousWaste));
  if (layout.maxContext > 0) {
    const QString slabs = layout.slabsThatFit == 1 ? tr("1 slab") : tr("%1 slabs").arg(layout.slabsThatFit);
    text += layout.numWaiting > 0 ? tr("; the pool holds %1: %2 of these chats could not start").arg(slabs).arg(layout.numWaiting)
                                  : tr("; the pool holds %1").arg(slabs);
  }
  return text;
}

QString kvPagedCaption(const KvPoolNumbers& numbers) {
  return KvContiguousStrip::tr("Paged: %1 slots in blocks of %2, %3 stored, %4 wasted; %5 blocks free")
      .arg(numbers.pagedSlots)
      .arg(numbers.blockSize)
      .arg(numbers.tokensStored)
      .arg(kvPercent(numbers.pagedWaste))
      .arg(numbers.numFree);
}

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
