#pragma once
// The window's menus of remote engines: Chat > Run this chat on (this machine, or a model of a
// remote server; the chat keeps it from its next turn on) and View > Watch a remote pool (this
// machine's, a pagedchat-server's, or a vLLM server's KV events), each filled as it opens from
// the session's endpoints; and File > Remote engines (the dialog). The choices are the
// session's to carry out (ChatController, PoolControl).

#include <QObject>

#include <functional>

#include "appcore/chat/chat_types.h"

class AppSession;
class QMenu;
class QWidget;

class RemoteMenus : public QObject {
  Q_OBJECT
 public:
  // session must outlive this; chatShown says which chat "Run this chat on" is about; window
  // is the dialogs' parent.
  RemoteMenus(AppSession& session, std::function<ChatId()> chatShown, QWidget* window);
  QMenu* addRunOnMenu(QMenu* parent);
  QMenu* addWatchPoolMenu(QMenu* parent);
  void showRemoteEngines();  // File > Remote engines

 private:
  void fillRunOn(QMenu* menu);
  void fillWatchPool(QMenu* menu);
  void askVllmPool();  // View > Watch a remote pool > vLLM KV events…

  AppSession& m_session;
  std::function<ChatId()> m_chatShown;
  QWidget* m_window;
};
