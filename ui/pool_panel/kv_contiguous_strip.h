#pragma once
// Paged against contiguous allocation, side by side: one bar for what one max-length slab per
// sequence would reserve, one for the slots the paged pool holds, each filled up to the tokens
// actually stored, with the waste in percent.

#include <QWidget>

#include "ui/pool_panel/kv_pool_numbers.h"

class KvContiguousStrip : public QWidget {
  Q_OBJECT
 public:
  explicit KvContiguousStrip(QWidget* parent = nullptr);
  void setNumbers(const KvPoolNumbers& numbers);
  // The two bars' captions; tests read them.
  QString contiguousText() const;
  QString pagedText() const;

  QSize sizeHint() const override { return {240, 52}; }
  QSize minimumSizeHint() const override { return {120, 48}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  KvPoolNumbers m_numbers;
};
