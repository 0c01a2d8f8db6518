// The model-open flow: dialog, progress, cancel, error box, recent list.
#include "ui/shell/model_loader.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>

#include <qcoro/qcorosignal.h>

#include "appcore/chat/chat_database.h"
#include "appcore/chat/plain_error.h"

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
  m_progress = new QWidget(window);
  m_progress->setObjectName(QStringLiteral("loadProgress"));
  auto* h = new QHBoxLayout(m_progress);
  h->setContentsMargins(0, 0, 0, 0);
  m_progressLabel = new QLabel(m_progress);
  m_progressBar = new QProgressBar(m_progress);
  m_progressBar->setRange(0, 1000);
  m_progressBar->setMaximumWidth(220);
  auto* cancel = new QPushButton(tr("Cancel"), m_progress);
  cancel->setObjectName(QStringLiteral("cancelLoad"));
  // The engine thread checks the flag at its next progress report.
  connect(cancel, &QPushButton::clicked, this, [bridge] { bridge->cancelLoad(); });
  h->addWidget(m_progressLabel);
  h->addWidget(m_progressBar);
  h->addWidget(cancel);
  m_progress->hide();
  connect(bridge, &EngineBridge::loadProgress, this, [this](const QString& stage, double fraction) {
    m_progressLabel->setText(tr("Loading: %1…").arg(stage));
    m_progressBar->setValue(overallPermille(stage, fraction));
  });
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
  m_progressLabel->setText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
  m_progressBar->setValue(0);
  m_progress->show();
  emit loadingChanged(true);

  // Connected before the load is queued, so its outcome cannot be missed.
  auto outcome = qCoro(this, &ModelLoader::ended);
  m_bridge->prepareLoad();
  QMetaObject::invokeMethod(m_bridge, [b = m_bridge, path, config] { b->loadModel(path, config); }, Qt::QueuedConnection);
  const auto [ok, message] = co_await std::move(outcome);

  m_progress->hide();
  m_loading = false;
  emit loadingChanged(false);
  if (ok) {
    m_currentPath = QFileInfo(path).absoluteFilePath();
    remember(path);
    emit modelInUse(m_currentPath);
  } else if (!message.isEmpty() && m_errorBoxes) {
    // Not exec(): the app keeps running (and tests keep driving it) while the box is up.
    auto* box = new QMessageBox(QMessageBox::Critical, tr("Could not open the model"),
                                tr("%1 could not be loaded.").arg(QFileInfo(path).fileName()), QMessageBox::Ok, m_window);
    box->setObjectName(QStringLiteral("loadError"));
    // The reason in a plain sentence; what the loader found, behind "Show Details…".
    const PlainError plain = explainLoadError(message);
    box->setInformativeText(plain.sentence);
    box->setDetailedText(plain.detail);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::finished, m_window, [window = m_window] { window->activateWindow(); });
    box->open();
  }
}
