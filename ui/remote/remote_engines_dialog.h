#pragma once
// File > Remote engines: the OpenAI-compatible servers a chat can run on. Add one by its URL
// (and API key, kept by RemoteEndpoints outside the chat database): the dialog asks it for its
// models (GET /v1/models, on a thread of its own) and keeps it only when it answers; a failure
// is said in the dialog in the client's words (refused, 401, ...). Refresh asks again; Remove
// forgets it and its key.

#include <QDialog>
#include <QPointer>
#include <QThread>

#include <atomic>
#include <memory>

class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;
class RemoteEndpoints;

class RemoteEnginesDialog : public QDialog {
  Q_OBJECT
 public:
  RemoteEnginesDialog(RemoteEndpoints& endpoints, QWidget* parent = nullptr);
  ~RemoteEnginesDialog() override;  // a request still asking is stopped and waited for
  // Asks url for its models and keeps it when it answers (what Add does with the fields).
  void addEndpoint(const QString& url, const QString& apiKey);

 signals:
  void checked(bool ok);  // an Add or Refresh was answered (tests wait on it)

 private:
  void fill();
  void setBusy(bool busy);

  RemoteEndpoints& m_endpoints;
  QLineEdit* m_url;
  QLineEdit* m_key;
  QPushButton* m_add;
  QPushButton* m_remove;
  QTreeWidget* m_list;
  QLabel* m_note;
  QPointer<QThread> m_worker;  // the request asking a server for its models, while it runs
  std::shared_ptr<std::atomic<bool>> m_stop = std::make_shared<std::atomic<bool>>(false);
};
