#pragma once
// The pool's events as a log a teacher can read and point at: each frame's KV events told in
// sentences (kv_event_text.h), one line per run of like events, newest last, under the step
// that did them. A click on a line marks its blocks in the pool view; the log can be filtered
// to one chat; "Export trace…" writes every event as JSON lines (step, kind, sequence, chat,
// block, peer, ref count, state) for a lesson's handout or a script.

#include <QHash>
#include <QWidget>

#include <vector>

#include "engine/kv/kv_events.h"
#include "appcore/pool/kv_event_text.h"
#include "appcore/pool/pool_frame.h"

class QComboBox;
class QListWidget;
class QPushButton;

class KvEventLogView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxLines = 2000;     // older lines go
  static constexpr int kMaxEvents = 200000;  // the trace keeps this many

  explicit KvEventLogView(QWidget* parent = nullptr);
  void addFrame(const PoolFrame& frame);  // every frame, in order; a frame of another pool starts it afresh
  void clear();

  // The lines shown (under the filter), for tests.
  QStringList shownLines() const;
  // Every event so far, one JSON object a line; false (with *error) when the file cannot be written.
  bool exportTrace(const QString& path, QString* error = nullptr) const;
  QByteArray traceJsonLines() const;
  void selectChat(const QString& title);  // the filter: "" for all

 signals:
  // A line was clicked: the blocks it names (device, host).
  void blocksPicked(const std::vector<int32_t>& blocks, const std::vector<int32_t>& hostBlocks);
  void savePictureRequested();  // "Save picture…": the panel saves the view

 private:
  struct Line {
    int64_t step = 0;
    QString chat;
    KvEventLine line;
  };
  struct TracedEvent {
    int64_t step = 0;
    pagedchat::KvEvent event;
  };
  void refill();
  void appendShown(const Line& line);

  QHash<pagedchat::SequenceId, QString> m_titles;  // every sequence seen, with its chat
  std::vector<Line> m_lines;
  std::vector<TracedEvent> m_trace;
  QString m_filter;
  qsizetype m_poolSize = -1;  // blocks of the pool the log is of
  QComboBox* m_chats;
  QListWidget* m_list;
};
