// The lock file and the local socket of one app per chat database: taking them, and the
// one-line exchange ("raise", "raised") of a second start with the first.
#include "appcore/session/instance_lock.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QLocalServer>
#include <QLocalSocket>

namespace {
const QByteArray kRaise = QByteArrayLiteral("raise\n");
const QByteArray kRaised = QByteArrayLiteral("raised\n");
constexpr int kAnswerTimeoutMs = 3000;  // a first app busy on its UI thread still answers in time
}  // namespace

InstanceLock::Held::Held(const QString& folder, bool raisedOther)
    : std::runtime_error(QStringLiteral("Another PagedChat holds the chats in %1").arg(folder).toStdString()),
      folder(folder),
      raisedOther(raisedOther) {}

QString InstanceLock::serverName(const QString& databasePath) {
  // Through the folder's canonical path: a symlinked data folder is the same chats.
  const QFileInfo file(databasePath);
  const QString dir = QFileInfo(file.absolutePath()).canonicalFilePath();
  const QString path = (dir.isEmpty() ? file.absolutePath() : dir) + QLatin1Char('/') + file.fileName();
  return QStringLiteral("pagedchat-") +
         QString::fromLatin1(QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha256).toHex().left(24));
}

InstanceLock::InstanceLock(const QString& databasePath, QObject* parent)
    : QObject(parent), m_lock(databasePath + QStringLiteral(".lock")) {
  const QString folder = QFileInfo(databasePath).absolutePath();
  QDir().mkpath(folder);
  // Stale only when its owner is gone (no process of its id and name on this machine), never
  // by age: an app left running for days still holds its chats.
  m_lock.setStaleLockTime(0);
  if (m_lock.tryLock(0)) {
    listen(serverName(databasePath));
    return;
  }
  if (m_lock.error() == QLockFile::LockFailedError) throw Held(folder, askToRaise(serverName(databasePath)));
  qWarning("PagedChat: cannot make the lock file %s; the chats are not guarded against a second app",
           qPrintable(databasePath + QStringLiteral(".lock")));
}

InstanceLock::~InstanceLock() {
  // The socket goes before the lock: closing it removes its file, which must not be the file
  // of an app that took the lock meanwhile.
  if (m_server) m_server->close();
  m_lock.unlock();
}

void InstanceLock::listen(const QString& name) {
  m_server = new QLocalServer(this);
  m_server->setSocketOptions(QLocalServer::UserAccessOption);
  // A socket file left by an app that died (its lock was stale) is in the way; the lock says
  // nobody listens on it.
  QLocalServer::removeServer(name);
  if (!m_server->listen(name))
    qWarning("PagedChat: cannot listen on %s (%s): a second start will not find this window", qPrintable(name),
             qPrintable(m_server->errorString()));
  connect(m_server, &QLocalServer::newConnection, this, [this] {
    while (QLocalSocket* s = m_server->nextPendingConnection()) {
      connect(s, &QLocalSocket::disconnected, s, &QObject::deleteLater);
      connect(s, &QLocalSocket::readyRead, s, [this, s] {
        if (!s->canReadLine()) return;
        if (s->readLine() == kRaise) {
          emit raiseRequested();
          s->write(kRaised);
          s->flush();
        }
        s->disconnectFromServer();
      });
    }
  });
}

bool InstanceLock::askToRaise(const QString& name) {
  QLocalSocket s;
  s.connectToServer(name);
  if (!s.waitForConnected(kAnswerTimeoutMs)) return false;
  s.write(kRaise);
  if (!s.waitForBytesWritten(kAnswerTimeoutMs)) return false;
  while (!s.canReadLine())
    if (!s.waitForReadyRead(kAnswerTimeoutMs)) return false;
  return s.readLine() == kRaised;
}
