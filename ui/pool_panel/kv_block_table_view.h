#pragma once
// The selected chat's block table, drawn as logical -> physical: for each logical block i a
// box "i" above an arrow to the physical block id it maps to (with its ref count when shared,
// "host" when the sequence is swapped out), wrapped over rows to the widget's width.

#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

#include "ui/pool_view/kv_cell_colors.h"
#include "appcore/pool/pool_frame.h"

class KvBlockTableView : public QWidget {
  Q_OBJECT
 public:
  explicit KvBlockTableView(QWidget* parent = nullptr);

  void setFrame(std::shared_ptr<const PoolFrame> frame);
  void setSequence(pagedchat::SequenceId seq);  // -1: none
  pagedchat::SequenceId sequence() const { return m_seq; }

  // What is drawn, for tests: the header line and (logical, physical) pairs; empty when the
  // selected sequence is not in the frame.
  QString headerText() const;
  std::vector<std::pair<int, int32_t>> mapping() const;
  bool onHost() const;  // the selected sequence is swapped out: its ids are host blocks

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  const PoolFrameSequence* selected() const;
  int entryWidth() const;
  int headerHeight(int width) const;  // the header line, wrapped to the width
  void fitHeight();  // a scroll area does not ask heightForWidth: keep the minimum height to it

  std::shared_ptr<const PoolFrame> m_frame;
  pagedchat::SequenceId m_seq = -1;
};
