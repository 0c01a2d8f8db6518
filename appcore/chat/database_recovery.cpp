// The chat database's check at start, its renaming aside and its backup (see database_recovery.h).
#include "appcore/chat/database_recovery.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QSqlError>
#include <QSqlQuery>
#include <QUuid>

namespace {

QString tr(const char* text) { return QCoreApplication::translate("ChatDatabase", text); }

// SQLite's verdict on the file: "" when it reads as a database whose pages are sound.
QString damageOf(const QString& path) {
  const QString connection = QStringLiteral("check-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
  QString verdict;
  {
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection);
    db.setDatabaseName(path);
    db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
    if (!db.open()) {
      verdict = db.lastError().text();
    } else {
      QSqlQuery q(db);
      if (!q.exec(QStringLiteral("PRAGMA quick_check")) || !q.next()) verdict = q.lastError().text();
      else if (q.value(0).toString() != QLatin1String("ok")) verdict = q.value(0).toString();
    }
    db.close();
  }
  QSqlDatabase::removeDatabase(connection);
  // quick_check lists every bad page: its first two lines say enough.
  QStringList lines = verdict.trimmed().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  if (lines.size() > 2) lines.resize(2);
  return lines.join(QStringLiteral("; ")).left(300);
}

}  // namespace

QString chatBackupPath(const QString& path) { return path + QStringLiteral(".backup"); }

QString DatabaseCheck::sentence() const {
  if (!damaged) return {};
  QString s = keptAs.isEmpty() ? tr("The chat database is damaged (SQLite: %1), and could not be moved aside; the app "
                                    "starts without it.").arg(sqliteSays)
                               : tr("The chat database was damaged (SQLite: %1). It is kept as %2, untouched.")
                                     .arg(sqliteSays, keptAs);
  const bool fromBackup = backupFrom.isValid() && restoredChats > 0;
  if (fromBackup)
    s += QLatin1Char(' ') + tr("%1 chats came back from the backup of %2.").arg(restoredChats).arg(QLocale().toString(backupFrom, QLocale::ShortFormat));
  if (recoveredChats > 0)
    s += QLatin1Char(' ') + (fromBackup ? tr("%1 more could still be read from the damaged file.")
                                        : tr("%1 chats could still be read from the damaged file.")).arg(recoveredChats);
  if (!fromBackup && recoveredChats == 0) s += QLatin1Char(' ') + tr("No chat could be read from it, and no backup held any.");
  return s;
}

DatabaseCheck checkChatDatabase(const QString& path) {
  DatabaseCheck check;
  if (!QFileInfo::exists(path)) return check;
  check.sqliteSays = damageOf(path);
  if (check.sqliteSays.isEmpty()) return check;
  check.damaged = true;
  // Aside, with its log and shared memory: the log belongs to that file alone.
  const QString aside = path + QStringLiteral(".damaged-") + QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
  if (!QFile::rename(path, aside)) return check;
  check.keptAs = aside;
  for (const char* suffix : {"-wal", "-shm"})
    if (QFileInfo::exists(path + QLatin1String(suffix))) QFile::rename(path + QLatin1String(suffix), aside + QLatin1String(suffix));
  const QString backup = chatBackupPath(path);
  if (QFileInfo::exists(backup) && damageOf(backup).isEmpty() && QFile::copy(backup, path))
    check.backupFrom = QFileInfo(backup).lastModified();
  return check;
}

bool backUpChatDatabase(QSqlDatabase& db, const QString& path, qint64 maxAgeSeconds, QString* error) {
  const QString backup = chatBackupPath(path);
  const QFileInfo old(backup);
  if (old.exists() && old.lastModified().secsTo(QDateTime::currentDateTime()) < maxAgeSeconds) return true;
  const QString fresh = backup + QStringLiteral(".new");
  QFile::remove(fresh);
  QSqlQuery q(db);
  q.prepare(QStringLiteral("VACUUM INTO ?"));  // a whole, consistent copy, written by SQLite itself
  q.addBindValue(fresh);
  if (!q.exec()) {
    *error = q.lastError().text();
    QFile::remove(fresh);
    return false;
  }
  QFile::remove(backup);
  if (!QFile::rename(fresh, backup)) {
    *error = tr("the backup could not be renamed into place");
    return false;
  }
  return true;
}
