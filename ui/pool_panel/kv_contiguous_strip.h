#pragma once
// Paged against contiguous allocation, the same chats drawn both ways on one scale: above, what
// one slab of the context length per chat would reserve (each slab filled up to the chat's
// tokens, the rest reserved and unused, and the slabs past the pool's end the chats that would
// have to wait); below, the blocks the paged pool holds for them (each filled up to its tokens,
// a shared block drawn once). Under each, the waste in figures.

#include <QString>
#include <QWidget>

#include <vector>

#include "appcore/pool/kv_pool_numbers.h"

struct KvLayoutSegment {
  pagedchat::SequenceId seq = -1;
  QString title;
  int colorIndex = 0;
  int64_t used = 0;      // slots holding its tokens
  int64_t reserved = 0;  // slots set aside for it
  bool fits = true;      // contiguous: its slab lies inside the pool
};

struct KvLayoutComparison {
  int64_t capacity = 0;     // the pool's slots (blocks x block size)
  int64_t maxContext = 0;   // one contiguous slab
  std::vector<KvLayoutSegment> contiguous;  // one slab per chat, in the legend's order
  std::vector<KvLayoutSegment> paged;       // the blocks each holds (a shared block with its first owner)
  int64_t contiguousReserved = 0, contiguousUsed = 0;
  int64_t pagedReserved = 0, pagedUsed = 0;
  int slabsThatFit = 0;  // capacity / maxContext
  int numWaiting = 0;    // chats whose slab lies past the pool's end
};

KvLayoutComparison computeLayoutComparison(const PoolFrame& frame);
// The two bars' captions: "Contiguous: 3 slabs of 256 = 768 tokens reserved, ..." and "Paged: ...".
QString kvContiguousCaption(const KvLayoutComparison& layout, const KvPoolNumbers& numbers);
QString kvPagedCaption(const KvPoolNumbers& numbers);

class KvContiguousStrip : public QWidget {
  Q_OBJECT
 public:
  explicit KvContiguousStrip(QWidget* parent = nullptr);
  void setFrame(const PoolFrame& frame, const KvPoolNumbers& numbers);
  const KvLayoutComparison& layout() const { return m_layout; }
  // The two bars' captions; tests read them.
  QString contiguousText() const;
  QString pagedText() const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  int captionHeight(int width, const QString& text) const;

  KvPoolNumbers m_numbers;
  KvLayoutComparison m_layout;
};
