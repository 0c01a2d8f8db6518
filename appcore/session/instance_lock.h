#pragma once
// One app per chat database. Two apps on one file would each keep their own copy of every chat
// and save over the other's, so the first takes a lock file next to the database (QLockFile:
// a lock left by an app that died is taken over) and listens on a local socket named after the
// file; a second start asks it through that socket to show its window, then goes (app/gui/main.cpp).

#include <QLockFile>
#include <QObject>
#include <QString>

#include <stdexcept>

class QLocalServer;

class InstanceLock : public QObject {
  Q_OBJECT
 public:
  // Another app holds the chats in `folder`. raisedOther: it was asked to show its window and
  // said it did; otherwise it did not answer.
  struct Held : std::runtime_error {
    Held(const QString& folder, bool raisedOther);
    QString folder;
    bool raisedOther;
  };

  // Takes the lock of the database at databasePath (making its folder), or throws Held after
  // asking the app that holds it to show its window. A lock that cannot be made at all (a
  // folder that is not writable) is no other app: it warns and holds nothing, and the
  // database says what is wrong when it cannot open the file either.
  explicit InstanceLock(const QString& databasePath, QObject* parent = nullptr);
  ~InstanceLock() override;

  bool isHeld() const { return m_lock.isLocked(); }
  // The local socket's name for a database file: the same for every app that opens it, and
  // short enough for a Unix socket path whatever the folder.
  static QString serverName(const QString& databasePath);

 signals:
  void raiseRequested();  // a second start on these chats asked to see this app's window

 private:
  static bool askToRaise(const QString& serverName);  // a second start's side
  void listen(const QString& serverName);

  QLockFile m_lock;
  QLocalServer* m_server = nullptr;  // a child; null unless the lock is held
};
