#pragma once
// The Engine toolbar, over the KV blocks in their dock: pause the pool shown (this machine's engine or a watched server's), step
// it once, ten times or to the next KV event while paused, and the teaching preset (small
// blocks in a small pool, so allocation, sharing and preemption show; it reloads the model).
// The checks follow the session: a lesson pauses the pool and turns the preset on too.

#include <QToolBar>

#include "appcore/session/app_settings.h"

class AppSession;

class EngineToolBar : public QToolBar {
  Q_OBJECT
 public:
  // session must outlive the toolbar.
  explicit EngineToolBar(AppSession& session, QWidget* parent = nullptr);

 signals:
  // The teaching preset toggled: these settings, to apply (the window says it reloads).
  void settingsWanted(const AppSettings& settings);
};
