#include "appcore/remote/remote_endpoints.h"

#include <algorithm>

#include <QDir>
#include <QFileInfo>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

#include "appcore/chat/chat_database.h"
#include "appcore/io/save_file.h"

namespace {
const QString kSettingKey = QStringLiteral("remote/endpoints");
}

RemoteEndpoints::RemoteEndpoints(ChatDatabase& db, QObject* parent) : QObject(parent), m_db(db) {
  for (const QJsonValue v : QJsonDocument::fromJson(m_db.setting(kSettingKey).toUtf8()).array()) {
    const QJsonObject o = v.toObject();
    RemoteEndpointEntry e{o.value(QStringLiteral("url")).toString(), {}};
    for (const QJsonValue m : o.value(QStringLiteral("models")).toArray()) e.models << m.toString();
    if (!e.url.isEmpty()) m_entries.append(e);
  }
  QFile keys(keysPath());
  if (keys.open(QIODevice::ReadOnly)) {
    const QJsonObject o = QJsonDocument::fromJson(keys.readAll()).object();
    for (auto it = o.begin(); it != o.end(); ++it) m_keys.insert(it.key(), it.value().toString());
  }
}

QString RemoteEndpoints::keysPath() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation)).filePath(QStringLiteral("remote-keys.json"));
}

void RemoteEndpoints::set(const QString& url, const QStringList& models, const QString& apiKey) {
  auto it = std::find_if(m_entries.begin(), m_entries.end(), [&](const RemoteEndpointEntry& e) { return e.url == url; });
  if (it == m_entries.end()) m_entries.append({url, models});
  else it->models = models;
  if (apiKey.isEmpty()) m_keys.remove(url);
  else m_keys.insert(url, apiKey);
  save();
}

void RemoteEndpoints::remove(const QString& url) {
  m_entries.erase(std::remove_if(m_entries.begin(), m_entries.end(), [&](const RemoteEndpointEntry& e) { return e.url == url; }),
                  m_entries.end());
  m_keys.remove(url);
  save();
}

QString RemoteEndpoints::apiKey(const QString& url) const { return m_keys.value(url); }

void RemoteEndpoints::save() {
  QJsonArray list;
  for (const RemoteEndpointEntry& e : m_entries)
    list.append(QJsonObject{{QStringLiteral("url"), e.url}, {QStringLiteral("models"), QJsonArray::fromStringList(e.models)}});
  m_db.setSetting(kSettingKey, QString::fromUtf8(QJsonDocument(list).toJson(QJsonDocument::Compact)));
  if (!writeKeys()) qWarning("remote endpoints: the keys could not be written to %s", qPrintable(keysPath()));
  emit changed();
}

bool RemoteEndpoints::writeKeys() {
  const QString path = keysPath();
  if (m_keys.isEmpty()) return !QFile::exists(path) || QFile::remove(path);
  QDir().mkpath(QFileInfo(path).absolutePath());
  QJsonObject o;
  for (auto it = m_keys.begin(); it != m_keys.end(); ++it) o.insert(it.key(), it.value());
  // The temporary file is the one renamed into place: its mode is set before a byte is written.
  return saveFile(path, QJsonDocument(o).toJson(QJsonDocument::Compact), nullptr,
                  QFileDevice::ReadOwner | QFileDevice::WriteOwner);
}
