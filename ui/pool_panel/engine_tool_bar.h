#pragma once
// The Engine toolbar, over the KV blocks in their dock: pause the pool shown (this machine's engine or a watched server's), step
// it once, ten times or to the next KV event while paused, and the teaching preset (small
// blocks in a small pool, so allocation, sharing and preemption show; it reloads the model).
// The checks follow the session: a lesson pauses the pool and turns the preset on too.

#include <QToolBar>

#include <functional>

#include "appcore/session/app_settings.h"

class AppSession;

class EngineToolBar : public QToolBar {
  Q_OBJECT
 public:
  // session must outlive the toolbar.
  explicit EngineToolBar(AppSession& session, QWidget* parent = nullptr);

  // While a lesson runs, Step, Step ×10 and Next event are the lesson's (as its panel's buttons
  // are: in the quantization lesson they show its results, not steps of an idle pool). The
  // window gives the hook; it returns false when no lesson takes the press.
  enum class Press { step, nextEvent };
  using LessonSteps = std::function<bool(Press press, int steps)>;
  void setLessonSteps(LessonSteps steps) { m_lessonSteps = std::move(steps); }

 private:
  bool toLesson(Press press, int steps) const { return m_lessonSteps && m_lessonSteps(press, steps); }
  LessonSteps m_lessonSteps;

 signals:
  // The teaching preset toggled: these settings, to apply (the window says it reloads).
  void settingsWanted(const AppSettings& settings);
};
