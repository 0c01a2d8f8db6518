#include "appcore/io/save_file.h"

#include <QCoreApplication>
#include <QSaveFile>

#include <cerrno>
#include <cstring>
#include <unistd.h>

bool saveFile(const QString& path, const QByteArray& bytes, QString* error, QFileDevice::Permissions permissions) {
  QSaveFile file(path);
  auto fail = [&](const QString& why) {
    file.cancelWriting();
    if (error) *error = why;
    return false;
  };
  if (!file.open(QIODevice::WriteOnly)) return fail(file.errorString());
  if (permissions && !file.setPermissions(permissions)) return fail(file.errorString());
  if (file.write(bytes) != bytes.size() || !file.flush()) return fail(file.errorString());
  if (::fsync(file.handle()) != 0) return fail(QString::fromLocal8Bit(std::strerror(errno)));
  if (!file.commit()) return fail(file.errorString());
  return true;
}
