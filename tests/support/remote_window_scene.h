#pragma once
// The app's remote-engine UI suites' scene: pagedchat-server on loopback (started with the
// test's options) and a window that added it through File > Remote engines, as a user does.

#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "support/remote_test_servers.h"
#include "ui/remote/remote_engines_dialog.h"
#include "appcore/session/app_services.h"
#include "ui/shell/main_window.h"

namespace pagedchat::test {

// pagedchat-server, its URL as the app names it.
struct AppNamedServer : PagedchatServer {
  using PagedchatServer::PagedchatServer;
  QString qurl() const { return QString::fromStdString(url); }
};

// Adds url (with key) in the Remote engines dialog; true when the server answered with its models.
// *note: the dialog's sentence.
inline bool addThroughTheDialog(MainWindow& w, const QString& url, const QString& key, QString* note = nullptr) {
  w.showRemoteEngines();
  auto* dialog = w.findChild<RemoteEnginesDialog*>(QStringLiteral("remoteEnginesDialog"));
  if (!dialog) return false;
  QSignalSpy checked(dialog, &RemoteEnginesDialog::checked);
  dialog->findChild<QLineEdit*>(QStringLiteral("remoteUrl"))->setText(url);
  dialog->findChild<QLineEdit*>(QStringLiteral("remoteKey"))->setText(key);
  dialog->findChild<QPushButton*>(QStringLiteral("addRemote"))->click();
  const bool answered = checked.wait(30000);
  if (note) *note = dialog->findChild<QLabel*>(QStringLiteral("remoteNote"))->text();
  const bool ok = answered && checked.first().first().toBool();
  dialog->close();
  w.activateWindow();  // the window's keys (Ctrl+Enter sends) act again once the dialog is gone
  return QTest::qWaitForWindowActive(&w) && ok;
}

// A server, and a window with that server added (no local model unless the test loads one).
struct RemoteScene {
  AppNamedServer server;
  AppServices services;
  MainWindow w{services};
  explicit RemoteScene(const QString& model, const QStringList& extra = {}) : server(model, extra) { w.show(); }
  bool ready() { return !server.url.empty() && addThroughTheDialog(w, server.qurl(), QString()); }
};

}  // namespace pagedchat::test
