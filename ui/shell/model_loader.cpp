// The model-open flow's faces: the file dialog, the progress bar and Cancel, the error box.
#include "ui/shell/model_loader.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>

#include "appcore/chat/plain_error.h"

ModelLoader::ModelLoader(ModelLoad& load, QWidget* window) : QObject(window), m_load(load), m_window(window) {
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
  connect(cancel, &QPushButton::clicked, &m_load, &ModelLoad::cancel);
  h->addWidget(m_progressLabel);
  h->addWidget(m_progressBar);
  h->addWidget(cancel);
  m_progress->hide();
  connect(&m_load, &ModelLoad::started, this, [this](const QString& path) {
    m_progressLabel->setText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
    m_progressBar->setValue(0);
    m_progress->show();
  });
  connect(&m_load, &ModelLoad::progress, this, [this](const QString& stage, int permille) {
    m_progressLabel->setText(tr("Loading: %1…").arg(stage));
    m_progressBar->setValue(permille);
  });
  connect(&m_load, &ModelLoad::loadingChanged, this, [this](bool loading) {
    if (!loading) m_progress->hide();
    emit loadingChanged(loading);
  });
  connect(&m_load, &ModelLoad::ended, this, [this](bool ok, const QString& message, const QString& path) {
    emit ended(ok, message);
    if (!ok && !message.isEmpty() && m_errorBoxes) showError(path, message);
  });
  connect(&m_load, &ModelLoad::modelInUse, this, &ModelLoader::modelInUse);
  connect(&m_load, &ModelLoad::recentModelsChanged, this, &ModelLoader::recentModelsChanged);
}

void ModelLoader::chooseAndLoad(const EngineBridge::Config& config, const QString& defaultPath) {
  const QString start = m_load.currentPath().isEmpty() ? defaultPath : m_load.currentPath();
  const QString path = QFileDialog::getOpenFileName(m_window, tr("Open a GGUF model"), start,
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) load(path, config);
}

void ModelLoader::showError(const QString& path, const QString& message) {
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
