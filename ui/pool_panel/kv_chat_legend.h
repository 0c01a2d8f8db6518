#pragma once
// The chats that hold blocks, each with its cell colour, title and block count; clicking one
// selects it in the block-pool view. Items are rebuilt only when the set of chats changes, so
// a click or the selection survives the frames that stream in.

#include <QListWidget>

#include <memory>

#include "ui/pool_view/kv_cell_colors.h"
#include "appcore/pool/pool_frame.h"

class KvChatLegend : public QListWidget {
  Q_OBJECT
 public:
  explicit KvChatLegend(QWidget* parent = nullptr);
  void setFrame(const PoolFrame& frame, const KvCellColors& colors);
  // Marks the chat's row selected without emitting sequenceSelected; -1 clears.
  void setSelectedSequence(pagedchat::SequenceId seq);
  // The row of a sequence, or -1.
  int rowOf(pagedchat::SequenceId seq) const;

  QSize sizeHint() const override { return {180, 120}; }

 signals:
  void sequenceSelected(pagedchat::SequenceId seq);
};
