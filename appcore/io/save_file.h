#pragma once
// Writing a whole file so that it is either all there or as it was. QSaveFile alone is not
// enough: with Qt 6.4 its commit() returns true after a failed flush for writes under 16 KB
// (on a full disk the "saved" file was empty, over the previous one), and it never syncs, so a
// full disk the kernel reports late (at write-back) went unseen. Here every write, the flush and
// an fsync are checked before the rename; any failure cancels it and says why.

#include <QByteArray>
#include <QFileDevice>
#include <QString>

// `permissions`, when given, are set on the temporary file before a byte is written (a key file:
// the user's alone from its first byte).
bool saveFile(const QString& path, const QByteArray& bytes, QString* error,
              QFileDevice::Permissions permissions = {});
