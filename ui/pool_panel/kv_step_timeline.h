#pragma once
// Continuous batching as a timeline: one column per engine step, one row per chat, each cell
// what that step computed for that chat (a chunk of its prompt, its next token, tokens computed
// again after a preemption) and the moves between pools (preempted, swapped out, swapped in).
// A long prompt's chunks show up interleaved with the other chats' decodes, one forward pass a
// column. Fed by PoolFrame::steps, so a frame that spans several steps still draws each.

#include <QHash>
#include <QString>
#include <QWidget>

#include <deque>
#include <functional>

#include "appcore/pool/kv_step_text.h"


class KvStepTimeline : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxSteps = static_cast<int>(PoolFrame::kMaxSteps);

  explicit KvStepTimeline(QWidget* parent = nullptr);
  void addFrame(const PoolFrame& frame);  // its steps join the right end
  void clear();
  const std::deque<pagedchat::StepRecord>& steps() const { return m_steps; }
  // The rows, top to bottom: each sequence in the order it first ran.
  QVector<pagedchat::SequenceId> rows() const { return m_rowOrder; }
  QString rowTitle(pagedchat::SequenceId seq) const;
  // What a cell says (tests read it): "P32" a prompt chunk of 32, "D" a decode, "R8" 8 tokens
  // computed again, "out" swapped out, "in" swapped back, "✕" preempted; empty: nothing.
  QString cellText(int64_t stepIndex, pagedchat::SequenceId seq) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override { return {160, 60}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // tooltips: the step's sentence

 private:
  struct Row {
    QString title;
    int colorIndex = 0;
  };
  int columnWidth() const;
  int rowHeight() const;
  int labelWidth() const;
  const pagedchat::StepRecord* stepAt(int x) const;

  std::deque<pagedchat::StepRecord> m_steps;
  QHash<pagedchat::SequenceId, Row> m_rows;
  QVector<pagedchat::SequenceId> m_rowOrder;
  int m_maxStepTokens = 1;  // the largest step seen: the scale of the bottom bars
};
