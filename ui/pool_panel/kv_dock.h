#pragma once
// The "KV blocks" dock: the pool panel drawing the pool the session shows, one pool at a time
// (this machine's, a watched pagedchat-server's, or vLLM's prefix cache from its KV events),
// its title naming whose it is. Paused, each step's marks stay drawn until the next step.

#include <QDockWidget>

class KvPoolPanel;
class PoolControl;

class KvDock : public QDockWidget {
  Q_OBJECT
 public:
  // pool must outlive the dock.
  explicit KvDock(PoolControl& pool, QWidget* parent = nullptr);
  KvPoolPanel* panel() const { return m_panel; }

 private:
  void showPoolOf(const QString& title);  // this machine's (title empty) or a remote one's

  KvPoolPanel* m_panel = nullptr;
  bool m_showsLocalPool = true;  // this machine's frames are drawn (not a watched server's or vLLM's)
};
