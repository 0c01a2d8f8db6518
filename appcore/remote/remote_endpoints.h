#pragma once
// The remote OpenAI-compatible servers the user added (File > Remote engines): each one's base
// URL and the models it listed, saved in the chat database's settings; each one's API key in a
// file of its own beside the app's configuration, readable by the user alone (mode 0600), so a
// copied or exported chat database never carries a key.

#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

class ChatDatabase;

struct RemoteEndpointEntry {
  QString url;
  QStringList models;  // as /v1/models listed them when the endpoint was added or refreshed
};

class RemoteEndpoints : public QObject {
  Q_OBJECT
 public:
  explicit RemoteEndpoints(ChatDatabase& db, QObject* parent = nullptr);

  const QVector<RemoteEndpointEntry>& entries() const { return m_entries; }
  // Adds the endpoint or updates its models and key (an empty key: none is sent).
  void set(const QString& url, const QStringList& models, const QString& apiKey);
  void remove(const QString& url);
  QString apiKey(const QString& url) const;
  // Where the keys are kept (tests check its mode).
  static QString keysPath();

 signals:
  void changed();

 private:
  void save();
  bool writeKeys();

  ChatDatabase& m_db;
  QVector<RemoteEndpointEntry> m_entries;
  QHash<QString, QString> m_keys;
};
