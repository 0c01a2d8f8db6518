// The model-load flow: queued to the engine thread, its outcome taken here, remembered.
#include "appcore/session/model_load.h"

#include <QFileInfo>

#include "appcore/chat/chat_database.h"

namespace {

const QString kRecentKey = QStringLiteral("recent_models");  // newline-separated paths

// One bar for the whole load: reading the file dominates a cold load, packing a warm one.
int overallPermille(const QString& stage, double fraction) {
  if (stage == QLatin1String("reading")) return static_cast<int>(600 * fraction);
  if (stage == QLatin1String("tokenizer")) return 600 + static_cast<int>(50 * fraction);
  return 650 + static_cast<int>(350 * fraction);  // packing weights
}

}  // namespace

ModelLoad::ModelLoad(EngineBridge* bridge, ChatDatabase& db, QObject* parent) : QObject(parent), m_bridge(bridge), m_db(db) {
  if (!m_bridge) return;
  connect(bridge, &EngineBridge::loadProgress, this,
          [this](const QString& stage, double fraction) { emit progress(stage, overallPermille(stage, fraction)); });
  connect(bridge, &EngineBridge::modelLoaded, this, [this](const QString& description) { emit bridgeSaid(true, description); });
  connect(bridge, &EngineBridge::modelFailed, this, [this](const QString& error) { emit bridgeSaid(false, error); });
  connect(bridge, &EngineBridge::modelLoadCancelled, this, [this] { emit bridgeSaid(false, QString()); });
}

QString ModelLoad::modelAtStart(const QString& fallback, QString* gone) const {
  const QStringList recent = recentModels();
  if (!recent.isEmpty()) {
    if (QFileInfo::exists(recent.first())) return recent.first();
    if (gone) *gone = recent.first();
    return QString();
  }
  return QFileInfo::exists(fallback) ? fallback : QString();
}

QStringList ModelLoad::recentModels() const {
  return m_db.setting(kRecentKey).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

void ModelLoad::remember(const QString& path) {
  QStringList recent = recentModels();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecent) recent.removeLast();
  m_db.setSetting(kRecentKey, recent.join(QLatin1Char('\n')));
  emit recentModelsChanged();
}

bool ModelLoad::load(const QString& path, const EngineBridge::Config& config) {
  if (m_loading || !m_bridge) return false;
  m_loading = true;
  emit started(path);
  emit loadingChanged(true);
  // Connected before the load is queued, so its outcome cannot be missed; one shot, and gone
  // with this object. (A coroutine awaiting the signal leaked its frame when the app closed
  // mid-load and the signal never came: LeakSanitizer, test_present_mode.)
  connect(this, &ModelLoad::bridgeSaid, this,
          [this, path](bool ok, const QString& message) { finish(ok, message, path); }, Qt::SingleShotConnection);
  m_bridge->prepareLoad();
  onEngineThread(m_bridge, [path, config](EngineBridge& b) { b.loadModel(path, config); });
  return true;
}

void ModelLoad::cancel() {
  if (m_bridge) m_bridge->cancelLoad();
}

void ModelLoad::finish(bool ok, const QString& message, const QString& path) {
  m_loading = false;
  emit loadingChanged(false);
  if (ok) {
    m_currentPath = QFileInfo(path).absoluteFilePath();
    remember(path);
  }
  emit ended(ok, message, path);
  if (ok) emit modelInUse(m_currentPath);
}
