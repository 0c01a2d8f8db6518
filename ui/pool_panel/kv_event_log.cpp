// The log's list, filter and trace.
#include "ui/pool_panel/kv_event_log.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "appcore/io/save_file.h"

KvEventLogView::KvEventLogView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvEventLog"));
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  auto* row = new QHBoxLayout;
  m_chats = new QComboBox(this);
  m_chats->setObjectName(QStringLiteral("kvEventFilter"));
  m_chats->addItem(tr("All chats"), QString());
  m_chats->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_chats->setMinimumContentsLength(10);
  v->addWidget(m_chats);  // a row of its own: the dock may be narrow
  auto* exportTraceButton = new QPushButton(tr("Export trace…"), this);
  exportTraceButton->setObjectName(QStringLiteral("exportKvTrace"));
  exportTraceButton->setToolTip(tr("Every KV event so far as JSON lines: step, kind, sequence, chat, block, peer, ref count, state"));
  auto* picture = new QPushButton(tr("Save picture…"), this);
  picture->setObjectName(QStringLiteral("saveKvPicture"));
  picture->setToolTip(tr("The block pool as it is drawn now, as a PNG"));
  row->addWidget(exportTraceButton);
  row->addWidget(picture);
  row->addStretch(1);
  v->addLayout(row);
  m_list = new QListWidget(this);
  m_list->setObjectName(QStringLiteral("kvEventLines"));
  m_list->setWordWrap(true);
  m_list->setUniformItemSizes(false);
  m_list->setToolTip(tr("What each step did to the KV blocks; click a line to mark its blocks in the pool"));
  // Three lines at least: the log shares a tab with the step timeline, and a 700 px window
  // needs the room it saves for the pool.
  m_list->setMinimumHeight(3 * fontMetrics().height() + 8);
  v->addWidget(m_list, 1);

  connect(m_chats, &QComboBox::activated, this, [this] {
    m_filter = m_chats->currentData().toString();
    refill();
  });
  connect(m_list, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row < 0) return;
    const QVariant index = m_list->item(row)->data(Qt::UserRole);
    if (!index.isValid() || index.toInt() >= static_cast<int>(m_lines.size())) return;
    const KvEventLine& line = m_lines[static_cast<size_t>(index.toInt())].line;
    emit blocksPicked(line.blocks, line.hostBlocks);
  });
  connect(exportTraceButton, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the KV event trace"), QStringLiteral("kv-trace.jsonl"),
                                                      tr("JSON lines (*.jsonl)"));
    if (!path.isEmpty()) exportTrace(path);
  });
  connect(picture, &QPushButton::clicked, this, &KvEventLogView::savePictureRequested);
}

void KvEventLogView::addFrame(const PoolFrame& frame) {
  // Another pool (a model or preset loaded): its sequence ids start again; so does the log.
  if (static_cast<qsizetype>(frame.snapshot.blocks.size()) != m_poolSize) {
    if (m_poolSize >= 0) clear();
    m_poolSize = static_cast<qsizetype>(frame.snapshot.blocks.size());
  }
  for (const PoolFrameSequence& s : frame.sequences)
    if (!s.chatTitle.isEmpty()) {
      m_titles.insert(s.id, s.chatTitle);  // the latest: a chat renamed is named so from now on
      if (m_chats->findData(s.chatTitle) < 0) m_chats->addItem(s.chatTitle, s.chatTitle);
    }
  for (const KvEventLine& note : frame.notes) {
    KvEventLine l = note;
    const QString title = m_titles.value(note.seq);
    l.text = (title.isEmpty() ? tr("sequence %1").arg(note.seq) : title) + note.text;
    m_lines.push_back({frame.stepIndex, title, l});
    appendShown(m_lines.back());
  }
  if (frame.events.empty()) {
    if (!frame.notes.empty()) m_list->scrollToBottom();
    return;
  }
  for (const pagedchat::KvEvent& e : frame.events) {
    // A fork child is named after the chat of its parent until its own frame labels it.
    if (e.kind == pagedchat::KvEventKind::fork && !m_titles.contains(e.seq) && m_titles.contains(e.peer))
      m_titles.insert(e.seq, m_titles.value(e.peer));
    if (m_trace.size() < kMaxEvents) m_trace.push_back({frame.stepIndex, e});
  }
  const auto lines =
      narrateKvEvents(frame.events, [this](pagedchat::SequenceId seq) { return m_titles.value(seq); }, frame.fromVllmEvents);
  for (const KvEventLine& l : lines) {
    m_lines.push_back({frame.stepIndex, l.seq >= 0 ? m_titles.value(l.seq) : QString(), l});
    appendShown(m_lines.back());
  }
  if (m_lines.size() > static_cast<size_t>(kMaxLines)) {
    m_lines.erase(m_lines.begin(), m_lines.begin() + static_cast<std::ptrdiff_t>(m_lines.size() - kMaxLines));
    refill();
  }
  m_list->scrollToBottom();
}

void KvEventLogView::appendShown(const Line& line) {
  if (!m_filter.isEmpty() && line.chat != m_filter) return;
  auto* item = new QListWidgetItem(tr("step %1 · %2").arg(line.step).arg(line.line.text), m_list);
  item->setData(Qt::UserRole, static_cast<int>(&line - m_lines.data()));
}

void KvEventLogView::refill() {
  m_list->clear();
  for (const Line& line : m_lines) appendShown(line);
  m_list->scrollToBottom();
}

void KvEventLogView::clear() {
  m_lines.clear();
  m_trace.clear();
  m_titles.clear();
  m_list->clear();
  while (m_chats->count() > 1) m_chats->removeItem(1);
}

void KvEventLogView::selectChat(const QString& title) {
  m_filter = title;
  m_chats->setCurrentIndex(std::max(0, m_chats->findData(title)));
  refill();
}

QStringList KvEventLogView::shownLines() const {
  QStringList out;
  for (int i = 0; i < m_list->count(); ++i) out << m_list->item(i)->text();
  return out;
}

QByteArray KvEventLogView::traceJsonLines() const {
  QByteArray out;
  for (const TracedEvent& t : m_trace) {
    const pagedchat::KvEvent& e = t.event;
    const QJsonObject o{{QStringLiteral("step"), static_cast<qint64>(t.step)},
                        {QStringLiteral("kind"), QString::fromLatin1(pagedchat::kv_event_name(e.kind))},
                        {QStringLiteral("seq"), static_cast<qint64>(e.seq)},
                        {QStringLiteral("chat"), m_titles.value(e.seq)},
                        {QStringLiteral("block"), e.block},
                        {QStringLiteral("peer"), static_cast<qint64>(e.peer)},
                        {QStringLiteral("ref_count"), e.ref_count},
                        {QStringLiteral("state"), QString::fromLatin1(pagedchat::block_state_name(e.block_state))}};
    out += QJsonDocument(o).toJson(QJsonDocument::Compact);
    out += '\n';
  }
  return out;
}

bool KvEventLogView::exportTrace(const QString& path, QString* error) const {
  return saveFile(path, traceJsonLines(), error);
}
