// Pause, step and the teaching preset, for the pool shown.
#include "ui/pool_panel/engine_tool_bar.h"

#include <QAction>

#include "appcore/session/app_session.h"
#include "appcore/session/pool_control.h"

EngineToolBar::EngineToolBar(AppSession& session, QWidget* parent) : QToolBar(tr("Engine"), parent) {
  setObjectName(QStringLiteral("engineToolBar"));
  setMovable(false);  // it sits over the pool it steps, in the KV dock
  setFloatable(false);
  PoolControl* pool = &session.pool();
  QAction* pause = addAction(tr("Pause"));
  pause->setToolTip(tr("Pause the engine of the pool shown: replies wait; Step and Next event then run it step by step"));
  pause->setObjectName(QStringLiteral("pauseEngine"));
  pause->setCheckable(true);
  connect(pause, &QAction::toggled, pool, &PoolControl::setPaused);
  connect(pool, &PoolControl::pausedChanged, pause, &QAction::setChecked);  // a lesson pauses it too
  QAction* step = addAction(tr("Step"));
  step->setObjectName(QStringLiteral("stepEngine"));
  step->setToolTip(tr("Run one engine step (while paused)"));
  connect(step, &QAction::triggered, pool, [this, pool] {
    if (!toLesson(Press::step, 1)) pool->step();
  });
  QAction* tenSteps = addAction(tr("Step ×10"));
  tenSteps->setObjectName(QStringLiteral("stepEngine10"));
  tenSteps->setToolTip(tr("Run ten engine steps (while paused), the pool view drawn after each"));
  connect(tenSteps, &QAction::triggered, pool, [this, pool] {
    if (!toLesson(Press::step, 10)) pool->step(10);
  });
  QAction* nextEvent = addAction(tr("Next event"));
  nextEvent->setObjectName(QStringLiteral("stepToNextKvEvent"));
  nextEvent->setToolTip(tr("Run engine steps (while paused) until one changes a KV block: an allocation, a share, a "
                           "copy-on-write, a cache hit, an eviction, a preemption or a swap (at most 500 steps)"));
  connect(nextEvent, &QAction::triggered, pool, [this, pool] {
    if (!toLesson(Press::nextEvent, 1)) pool->stepToNextEvent();
  });

  QAction* teaching = addAction(tr("Teaching"));
  teaching->setObjectName(QStringLiteral("teachingPreset"));
  teaching->setCheckable(true);
  teaching->setChecked(session.settings().teachingPreset);
  teaching->setToolTip(tr("The teaching preset: blocks of %1 tokens in a pool of %2, chats of %3 tokens, %4 tokens per step: allocation, sharing, "
                          "copy-on-write and preemption become visible (reloads the model)")
                           .arg(AppSettings::kTeachingBlockSize)
                           .arg(AppSettings::kTeachingBlocks)
                           .arg(AppSettings::kTeachingContext)
                           .arg(AppSettings::kTeachingStepTokens));
  connect(teaching, &QAction::toggled, this, [this, &session](bool on) {
    AppSettings s = session.settings();
    s.teachingPreset = on;
    s.teachingBlocks = AppSettings::kTeachingBlocks;  // the preset's own pool, not a lesson's
    s.teachingHostBlocks = 0;
    emit settingsWanted(s);
  });
  // The settings as the session has them now (a lesson turns the teaching preset on too).
  connect(&session, &AppSession::settingsChanged, teaching, [teaching, &session] {
    const QSignalBlocker quiet(teaching);
    teaching->setChecked(session.settings().teachingPreset);
  });
}
