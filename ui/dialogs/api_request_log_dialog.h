#pragma once
// The local API's request log (Serve API's menu > Request log, or View > API request log): one
// row per request the app's server answered, newest at the bottom, as it happens: when, the
// method and path, the status (499: the client left first), a completion's tokens (prompt,
// of them cached, and generated) and how long it took. A developer pointing a tool at the app
// sees what it asked and what came back.

#include <QDialog>

#include "server/api/api_request_log.h"

class LocalApiServer;
class QTableWidget;

class ApiRequestLogDialog : public QDialog {
  Q_OBJECT
 public:
  // server must outlive the dialog.
  explicit ApiRequestLogDialog(const LocalApiServer& server, QWidget* parent = nullptr);
  QTableWidget* table() const { return m_table; }

 private:
  void append(const ApiLogEntry& entry);
  QTableWidget* m_table = nullptr;
};
