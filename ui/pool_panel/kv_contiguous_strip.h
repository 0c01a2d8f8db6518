#pragma once
// Paged against contiguous allocation, the same chats drawn both ways on one scale: above, what
// one slab of the context length per chat would reserve (each slab filled up to the chat's
// tokens, the rest reserved and unused, and the slabs past the pool's end the chats that would
// have to wait); below, the blocks the paged pool holds for them (each filled up to its tokens,
// a shared block drawn once). Under each, the waste in figures.

#include <QString>
#include <QWidget>


#include "appcore/pool/kv_layout_comparison.h"

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
