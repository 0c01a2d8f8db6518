#pragma once
// The "KV blocks" dock: the pool panel drawing the pool the session shows, one pool at a time
// (this machine's, a watched pagedchat-server's, or vLLM's prefix cache from its KV events),
// its title naming whose it is, and over it the Engine toolbar that pauses and steps that pool:
// where a teacher looks, out of a chatter's way. Paused, each step's marks stay drawn until the
// next step.

#include <QDockWidget>

class AppSession;
class EngineToolBar;
class KvPoolPanel;

class KvDock : public QDockWidget {
  Q_OBJECT
 public:
  // session must outlive the dock.
  explicit KvDock(AppSession& session, QWidget* parent = nullptr);
  KvPoolPanel* panel() const { return m_panel; }
  EngineToolBar* engineToolBar() const { return m_toolBar; }

 private:
  void showPoolOf(const QString& title);  // this machine's (title empty) or a remote one's

  KvPoolPanel* m_panel = nullptr;
  EngineToolBar* m_toolBar = nullptr;
  bool m_showsLocalPool = true;  // this machine's frames are drawn (not a watched server's or vLLM's)
};
