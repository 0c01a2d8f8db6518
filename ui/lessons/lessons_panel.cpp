// The list, the buttons (each one a toolbar action of the window) and the sentence.
#include "ui/lessons/lessons_panel.h"

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "ui/shell/main_window.h"

LessonsPanel::LessonsPanel(MainWindow& window, LessonRunner& runner, QWidget* parent)
    : QWidget(parent), m_window(window), m_runner(runner) {
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
  m_list->setMaximumHeight(m_list->sizeHintForRow(0) * (m_list->count() + 1));
  v->addWidget(m_list);
  m_start = new QPushButton(tr("Start"), this);
  m_start->setObjectName(QStringLiteral("startLesson"));
  m_start->setToolTip(tr("Sets the lesson's scene up on the engine (the teaching preset, its chats and turns) and pauses "
                         "just before what it shows; again: replays it from a fresh scene"));
  v->addWidget(m_start);
  auto button = [&](const QString& text, const char* name, const char* action) {
    auto* b = new QPushButton(text, this);
    b->setObjectName(QString::fromLatin1(name));
    connect(b, &QPushButton::clicked, this, [this, action = QString::fromLatin1(action)] {
      if (QAction* a = m_window.findChild<QAction*>(action)) a->trigger();
    });
    return b;
  };
  m_next = button(tr("Next event"), "lessonNextEvent", "stepToNextKvEvent");
  m_step = button(tr("Step"), "lessonStep", "stepEngine");
  m_ten = button(tr("Step ×10"), "lessonStep10", "stepEngine10");
  m_end = new QPushButton(tr("Run to end"), this);
  m_end->setObjectName(QStringLiteral("lessonRunToEnd"));
  connect(m_end, &QPushButton::clicked, this, [this] {
    QAction* pause = m_window.findChild<QAction*>(QStringLiteral("pauseEngine"));
    if (pause && pause->isChecked()) pause->trigger();
  });
  auto* row = new QHBoxLayout;
  row->addWidget(m_next);
  row->addWidget(m_step);
  v->addLayout(row);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(m_ten);
  row2->addWidget(m_end);
  v->addLayout(row2);
  m_status = new QLabel(tr("Pick a lesson and press Start."), this);
  m_status->setObjectName(QStringLiteral("lessonStatus"));
  m_status->setWordWrap(true);
  v->addWidget(m_status);
  m_sentence = new QLabel(this);
  m_sentence->setObjectName(QStringLiteral("lessonSentence"));
  m_sentence->setWordWrap(true);
  m_sentence->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont big = m_sentence->font();
  big.setPointSizeF(big.pointSizeF() * 1.25);
  m_sentence->setFont(big);
  v->addWidget(m_sentence, 1, Qt::AlignTop);

  connect(m_start, &QPushButton::clicked, this, [this] {
    if (QListWidgetItem* item = m_list->currentItem()) m_runner.start(item->data(Qt::UserRole).toString());
  });
  connect(&m_runner, &LessonRunner::stateChanged, this, &LessonsPanel::onState);
  connect(&m_runner, &LessonRunner::sentence, m_sentence, &QLabel::setText);
  onState(LessonRunner::State::idle, {});
}

QString LessonsPanel::sentenceShown() const { return m_sentence->text(); }

void LessonsPanel::onState(LessonRunner::State state, const QString& message) {
  using State = LessonRunner::State;
  const bool stepping = state == State::ready || state == State::reached;
  for (QPushButton* b : {m_next, m_step, m_ten, m_end}) b->setEnabled(stepping);
  m_start->setEnabled(state != State::preparing);
  m_start->setText(state == State::idle || state == State::failed ? tr("Start") : tr("Start again"));
  if (state == State::ready) m_sentence->setText(message);
  else if (!message.isEmpty()) m_status->setText(message);
  if (state == State::ready && m_runner.current()) m_status->setText(m_runner.current()->title);
}
