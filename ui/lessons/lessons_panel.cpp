// The list, the buttons (each one a toolbar action of the window) and the sentence.
#include "ui/lessons/lessons_panel.h"

#include <algorithm>

#include <QUrl>

#include <functional>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QUrl>
#include <QVBoxLayout>

#include "appcore/session/pool_control.h"

LessonsPanel::LessonsPanel(PoolControl& pool, LessonRunner& runner, QWidget* parent)
    : QWidget(parent), m_pool(pool), m_runner(runner) {
  setObjectName(QStringLiteral("lessonsPanel"));
  auto* v = new QVBoxLayout(this);
  m_list = new QListWidget(this);
  m_list->setObjectName(QStringLiteral("lessonList"));
  for (const LessonInfo& l : LessonRunner::lessons()) {
    auto* item = new QListWidgetItem(l.title, m_list);
    item->setData(Qt::UserRole, l.id);
    item->setToolTip(l.intro);
  }
  m_list->setCurrentRow(0);
  // Every title whole, wrapped at the dock's width, never scrolled sideways; as tall as its rows
  // where the dock has the room (fitListHeight), else scrolled down: fifteen lessons beside the
  // buttons and the sentence do not fit a 700 px window, and the window must not grow past it.
  m_list->setWordWrap(true);
  m_list->setTextElideMode(Qt::ElideNone);
  m_list->setResizeMode(QListView::Adjust);
  m_list->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  m_list->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
  m_list->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  m_list->setMinimumHeight(6 * fontMetrics().height());
  m_list->viewport()->installEventFilter(this);
  v->addWidget(m_list, 3);
  m_start = new QPushButton(tr("Start"), this);
  m_start->setObjectName(QStringLiteral("startLesson"));
  m_start->setToolTip(tr("Sets the lesson's scene up on the engine (the teaching preset, its chats and turns) and pauses "
                         "just before what it shows; again: replays it from a fresh scene"));
  v->addWidget(m_start);
  // The Engine toolbar's steps, on the pool the lesson is told on (the pool shown).
  auto button = [&](const QString& text, const char* name, std::function<void()> act) {
    auto* b = new QPushButton(text, this);
    b->setObjectName(QString::fromLatin1(name));
    connect(b, &QPushButton::clicked, this, std::move(act));
    return b;
  };
  m_next = button(tr("Next event"), "lessonNextEvent", [this] { m_runner.nextEvent(); });
  m_step = button(tr("Step"), "lessonStep", [this] { m_runner.step(); });
  m_ten = button(tr("Step ×10"), "lessonStep10", [this] { m_runner.step(10); });
  m_end = button(tr("Run to end"), "lessonRunToEnd", [this] { m_runner.runToEnd(); });
  auto* row = new QHBoxLayout;
  row->addWidget(m_next);
  row->addWidget(m_step);
  v->addLayout(row);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(m_ten);
  row2->addWidget(m_end);
  v->addLayout(row2);
  // The words scroll: a long sentence in large type must not make the dock (and so the window)
  // taller than the screen.
  auto* words = new QWidget;
  auto* wordsLayout = new QVBoxLayout(words);
  wordsLayout->setContentsMargins(0, 0, 0, 0);
  m_status = new QLabel(tr("Pick a lesson and press Start."), words);
  m_status->setObjectName(QStringLiteral("lessonStatus"));
  m_status->setWordWrap(true);
  wordsLayout->addWidget(m_status);
  m_sentence = new QLabel(words);
  m_sentence->setObjectName(QStringLiteral("lessonSentence"));
  m_sentence->setWordWrap(true);
  m_sentence->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont big = m_sentence->font();
  big.setPointSizeF(big.pointSizeF() * 1.25);
  m_sentence->setFont(big);
  wordsLayout->addWidget(m_sentence);
  wordsLayout->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setObjectName(QStringLiteral("lessonWords"));
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(words);
  v->addWidget(scroll, 1);

  connect(m_start, &QPushButton::clicked, this, [this] {
    if (QListWidgetItem* item = m_list->currentItem()) m_runner.start(item->data(Qt::UserRole).toString());
  });
  connect(&m_runner, &LessonRunner::stateChanged, this, &LessonsPanel::onState);
  connect(&m_runner, &LessonRunner::sentence, m_sentence, &QLabel::setText);
  onState(LessonRunner::State::idle, {});
}

QString LessonsPanel::sentenceShown() const { return m_sentence->text(); }
QString LessonsPanel::statusShown() const { return m_status->text(); }

bool LessonsPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_list->viewport() && event->type() == QEvent::Resize) fitListHeight();
  return QWidget::eventFilter(watched, event);
}

void LessonsPanel::fitListHeight() {
  int rows = 0;
  for (int i = 0; i < m_list->count(); ++i) rows += m_list->visualItemRect(m_list->item(i)).height();
  const int h = rows + 2 * m_list->frameWidth();
  if (m_list->maximumHeight() != h) m_list->setMaximumHeight(std::max(h, m_list->minimumHeight()));
}

void LessonsPanel::onState(LessonRunner::State state, const QString& message) {
  using State = LessonRunner::State;
  const bool stepping = state == State::ready || state == State::reached;
  for (QPushButton* b : {m_next, m_step, m_ten, m_end}) b->setEnabled(stepping);
  m_start->setEnabled(state != State::preparing);
  m_start->setText(state == State::idle || state == State::failed ? tr("Start") : tr("Start again"));
  if (state == State::ready) m_sentence->setText(message);
  else if (!message.isEmpty()) m_status->setText(message);
  if (state == State::idle) m_sentence->clear();  // left: the last step's sentence no longer holds
  if (state == State::ready && m_runner.current())
    m_status->setText(m_runner.onRemotePool() ? tr("%1 (on %2's pool)").arg(m_runner.current()->title, QUrl(m_pool.watchedPool()).authority())
                                              : m_runner.current()->title);
  // The lesson running is the one marked in the list, however it was started (the list, a
  // replay, the screenshot tour).
  if (const LessonInfo* running = m_runner.current())
    for (int i = 0; i < m_list->count(); ++i)
      if (m_list->item(i)->data(Qt::UserRole).toString() == running->id && m_list->currentRow() != i) m_list->setCurrentRow(i);
}
