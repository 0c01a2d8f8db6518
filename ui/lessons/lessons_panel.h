#pragma once
// The Lessons dock: one entry per lesson (LessonRunner::lessons), Start (again: replay), the
// step controls (Next event, Step, Step ×10, Run to end: what the Engine toolbar does, on the pool shown), and
// the lesson's sentence: its introduction, then each event's, in large type for a classroom.

#include <QWidget>

#include "appcore/lessons/lesson_runner.h"

class QLabel;
class QListWidget;
class QPushButton;
class PoolControl;

class LessonsPanel : public QWidget {
  Q_OBJECT
 public:
  LessonsPanel(PoolControl& pool, LessonRunner& runner, QWidget* parent = nullptr);
  QString sentenceShown() const;
  QString statusShown() const;  // the line over it: the lesson's title, or why it could not start

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void fitListHeight();
  void onState(LessonRunner::State state, const QString& message);

  PoolControl& m_pool;
  LessonRunner& m_runner;
  QListWidget* m_list;
  QPushButton *m_start, *m_next, *m_step, *m_ten, *m_end;
  QLabel* m_status;
  QLabel* m_sentence;
};
