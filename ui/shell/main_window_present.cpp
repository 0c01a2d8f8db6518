// The main window's present mode (see MainWindow::setPresenting): for a class, the pool is the
// stage. A lesson turns it on when it starts and off when it is left; F5 does the same outside
// lessons (and, pressed during one, makes the choice the user's).
#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QResizeEvent>

#include "appcore/lessons/lesson_runner.h"
#include "ui/pool_panel/kv_dock.h"
#include "ui/pool_panel/kv_event_log.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/shell/main_window.h"

void MainWindow::buildPresentMode() {
  m_presentAction = new QAction(tr("&Present the pool"), this);
  m_presentAction->setObjectName(QStringLiteral("presentAction"));
  m_presentAction->setShortcut(QKeySequence(Qt::Key_F5));
  m_presentAction->setShortcutContext(Qt::WindowShortcut);
  m_presentAction->setCheckable(true);
  m_presentAction->setToolTip(tr("The KV block pool large, for a projector: the chats a narrow strip, the sentence of "
                                 "the moment under the pool"));
  connect(m_presentAction, &QAction::triggered, this, [this](bool on) {
    m_presentingForLesson = false;  // the user's choice from now on
    setPresenting(on);
  });
  addAction(m_presentAction);
  m_viewMenu->insertAction(m_viewMenu->actions().value(0), m_presentAction);

  // A lesson presents while it runs, and tells the caption what to say.
  connect(m_lessons, &LessonRunner::stateChanged, this, [this](LessonRunner::State state, const QString&) {
    KvPoolPanel* panel = m_kvDock->panel();
    if (state == LessonRunner::State::preparing && !m_presenting) {
      setPresenting(true);
      m_presentingForLesson = true;
    }
    if (state == LessonRunner::State::ready && m_lessons->current()) {
      // The story is told from here (the lesson counts its events from here too): the lines of
      // an earlier lesson, or of this one's scene being set, would read as part of it.
      panel->eventLog()->clear();
      panel->setCaption(m_lessons->current()->intro);
    }
    if (state == LessonRunner::State::idle) {
      panel->setCaption(QString());
      if (m_presentingForLesson) setPresenting(false);
      m_presentingForLesson = false;
    }
  });
  connect(m_lessons, &LessonRunner::sentence, m_kvDock->panel(), &KvPoolPanel::setCaption);
}

void MainWindow::setPresenting(bool on) {
  if (on == m_presenting) return;
  m_presenting = on;
  m_presentAction->setChecked(on);
  KvPoolPanel* panel = m_kvDock->panel();
  if (!on) {
    panel->setPresenting(false);
    centralWidget()->show();
    restoreState(m_stateBeforePresenting);
    return;
  }
  m_stateBeforePresenting = saveState();
  m_kvDock->setFloating(false);
  m_kvDock->show();
  m_kvDock->raise();
  // The transcript steps aside (it needs some 460 px to lay out its input row, a third of a
  // 1366 px window).
  centralWidget()->hide();
  layOutPresenting();
  panel->setPresenting(true);
}

// The left docks (the chat list and the lessons, tabbed) a strip with the lesson's buttons; the
// pool the rest. Again at each resize: a window made larger while presenting gives the pool
// the room.
void MainWindow::layOutPresenting() {
  QList<QDockWidget*> docks{m_kvDock};
  QList<int> widths{width() * 5 / 6};
  for (const char* name : {"lessonsDock", "chatsDock"}) {
    auto* d = findChild<QDockWidget*>(QLatin1String(name));
    if (d && d->isVisible() && !d->visibleRegion().isEmpty()) {
      docks.prepend(d);
      widths.prepend(width() / 6);
      break;
    }
  }
  resizeDocks(docks, widths, Qt::Horizontal);
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  if (m_presenting) layOutPresenting();
}
