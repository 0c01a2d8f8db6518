#pragma once
// The local API in the window: "Serve API" and the URL it serves at, in the status bar.
// On, the app's OpenAI-compatible server (LocalApiServer) listens on 127.0.0.1 at the saved
// port; on or off is saved and restored at the next start. Built without the server, the label
// says nothing and there is no action. The button's menu opens the request log.

#include <QObject>
#include <QString>

class ChatDatabase;
class LocalApiServer;
class QAction;
class QLabel;
class QStatusBar;
class QWidget;

class ApiServerSwitch : public QObject {
  Q_OBJECT
 public:
  // server may be null (built without it); server and db must outlive the switch.
  ApiServerSwitch(LocalApiServer* server, ChatDatabase& db, QStatusBar* statusBar, QObject* parent = nullptr);

  void setEnabled(bool on);
  void setPort(int port);  // 0 picks a free one; saved, used from the next start of the server
  void restore();          // on, when it was on at the last exit
  QString url() const;     // empty when it is not running
  void showRequestLog();   // the API request log, one window, opened or raised

 signals:
  void changed(const QString& url, const QString& error);  // url empty: stopped or failed

 private:
  LocalApiServer* m_server = nullptr;
  ChatDatabase& m_db;
  QAction* m_action = nullptr;
  QLabel* m_label = nullptr;
  QWidget* m_requestLog = nullptr;  // the log's window while it is open
};
