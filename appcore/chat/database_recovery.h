#pragma once
// The chat database checked before it opens, and kept safe: a file SQLite calls damaged
// (truncated, a scribbled header, a malformed page: PRAGMA quick_check) is renamed aside with
// the time in its name, never deleted or written over; the last backup, when there is one,
// takes its place; and what can still be read out of the damaged file is added back
// (ChatDatabase does that part). The backup is a whole consistent copy (VACUUM INTO), taken
// when the database opens fine and its backup is a day old or missing.

#include <QDateTime>
#include <QSqlDatabase>
#include <QString>

struct DatabaseCheck {
  bool damaged = false;
  QString sqliteSays;         // why: SQLite's words (quick_check's first line, or the open's error)
  QString keptAs;             // the damaged file, renamed aside ("": it could not be; it is left where it was)
  QDateTime backupFrom;       // the backup the new file started from (invalid: none)
  int recoveredChats = 0;     // read out of the damaged file and added (ChatDatabase)
  int restoredChats = 0;      // from the backup
  // One paragraph for the window: what happened, where the damaged file is, what came back.
  QString sentence() const;
};

// Checks the file at `path` (nothing to do when it does not exist); when it is damaged, renames
// it (and its -wal and -shm) aside and puts the last backup in its place when there is one.
DatabaseCheck checkChatDatabase(const QString& path);
QString chatBackupPath(const QString& path);  // <path>.backup
// A new backup of the open database when the last is older than maxAge (or missing): written
// aside, then renamed over the old one. False, with *error, when it could not be.
bool backUpChatDatabase(QSqlDatabase& db, const QString& path, qint64 maxAgeSeconds, QString* error);
