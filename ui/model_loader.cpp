// The model-open flow: dialog, progress, cancel, error box, recent list.
#include "ui/model_loader.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QMetaObject>
#include <QPointer>
#include <QProgressDialog>

#include <qcoro/qcorosignal.h>

#include "ui/chat_database.h"

namespace {

const QString kRecentKey = QStringLiteral("recent_models");  // newline-separated paths

// One bar for the whole load: reading the file dominates a cold load, packing a warm one.
int overallPermille(const QString& stage, double fraction) {
  if (stage == QLatin1String("reading")) return static_cast<int>(600 * fraction);
  if (stage == QLatin1String("tokenizer")) return 600 + static_cast<int>(50 * fraction);
  return 650 + static_cast<int>(350 * fraction);  // packing weights
}

}  // namespace

ModelLoader::ModelLoader(EngineBridge* bridge, ChatDatabase& db, QWidget* window)
    : QObject(window), m_bridge(bridge), m_db(db), m_window(window) {
  // The bridge's outcome signals, re-emitted on this (the UI) thread, where run() awaits them.
  connect(bridge, &EngineBridge::modelLoaded, this, [this](const QString& description) { emit ended(true, description); });
  connect(bridge, &EngineBridge::modelFailed, this, [this](const QString& error) { emit ended(false, error); });
  connect(bridge, &EngineBridge::modelLoadCancelled, this, [this] { emit ended(false, QString()); });
}

QStringList ModelLoader::recentModels() const {
  return m_db.setting(kRecentKey).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

void ModelLoader::remember(const QString& path) {
  QStringList recent = recentModels();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  recent.removeAll(absolute);
  recent.prepend(absolute);
  while (recent.size() > kMaxRecent) recent.removeLast();
  m_db.setSetting(kRecentKey, recent.join(QLatin1Char('\n')));
  emit recentModelsChanged();
}

void ModelLoader::chooseAndLoad(const EngineBridge::Config& config, const QString& defaultPath) {
  const QString start = m_currentPath.isEmpty() ? defaultPath : m_currentPath;
  const QString path = QFileDialog::getOpenFileName(m_window, tr("Open a GGUF model"), start,
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) load(path, config);
}

void ModelLoader::load(const QString& path, const EngineBridge::Config& config) {
  if (m_loading) return;
  run(path, config);  // eager: runs to its first co_await, then returns here
}

QCoro::Task<> ModelLoader::run(QString path, EngineBridge::Config config) {
  m_loading = true;
  QPointer<QProgressDialog> progress =
      new QProgressDialog(tr("Loading %1…").arg(QFileInfo(path).fileName()), tr("Cancel"), 0, 1000, m_window);
  progress->setObjectName(QStringLiteral("loadProgress"));
  progress->setWindowTitle(tr("Opening a model"));
  progress->setWindowModality(Qt::WindowModal);
  progress->setMinimumDuration(400);  // a warm small model loads faster than a dialog is worth
  progress->setAutoClose(false);
  progress->setAutoReset(false);
  progress->setValue(0);
  connect(progress, &QProgressDialog::canceled, this, [bridge = m_bridge] { bridge->cancelLoad(); });
  connect(m_bridge, &EngineBridge::loadProgress, progress, [progress](const QString& stage, double fraction) {
    progress->setLabelText(tr("Loading: %1…").arg(stage));
    progress->setValue(overallPermille(stage, fraction));
  });

  // Connected before the load is queued, so its outcome cannot be missed.
  auto outcome = qCoro(this, &ModelLoader::ended);
  m_bridge->prepareLoad();
  QMetaObject::invokeMethod(m_bridge, [b = m_bridge, path, config] { b->loadModel(path, config); }, Qt::QueuedConnection);
  const auto [ok, message] = co_await std::move(outcome);

  const bool shown = progress && progress->isVisible();
  delete progress.data();
  // The dialog was the active window; give activation back so the window's shortcuts work.
  if (shown) m_window->activateWindow();
  m_loading = false;
  if (ok) {
    m_currentPath = QFileInfo(path).absoluteFilePath();
    remember(path);
    emit modelInUse(m_currentPath);
  } else if (!message.isEmpty()) {
    // Not exec(): the app keeps running (and tests keep driving it) while the box is up.
    auto* box = new QMessageBox(QMessageBox::Critical, tr("Could not open the model"),
                                tr("%1 could not be loaded.").arg(QFileInfo(path).fileName()), QMessageBox::Ok, m_window);
    box->setObjectName(QStringLiteral("loadError"));
    box->setInformativeText(message);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, m_window, [window = m_window] { window->activateWindow(); });
    box->open();
  }
}
