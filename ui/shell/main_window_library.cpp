// The main window's model library parts: the welcome page (no model in use) and the model
// library dialog, and the folders the user adds to it (saved in the chat database).
#include "ui/shell/main_window.h"

#include <QFileInfo>
#include <QLabel>
#include <QStackedWidget>

#include "models/model_paths.h"
#include "appcore/chat/chat_database.h"
#include "ui/library/model_library_dialog.h"
#include "ui/library/welcome_view.h"
#include "ui/shell/model_loader.h"

namespace {
const QString kFoldersKey = QStringLiteral("model_folders");  // newline-separated
}

QStringList MainWindow::modelFolders() const { return m_db->setting(kFoldersKey).split(QLatin1Char('\n'), Qt::SkipEmptyParts); }

void MainWindow::setModelFolders(const QStringList& folders) { m_db->setSetting(kFoldersKey, folders.join(QLatin1Char('\n'))); }

void MainWindow::buildWelcome() {
  m_welcome = new WelcomeView(m_central);
  m_central->addWidget(m_welcome);
  // Until a model is in use a failed load is said on the welcome page, not in a box.
  m_loader->setErrorBoxes(false);
  connect(m_welcome, &WelcomeView::modelChosen, this, [this](const QString& path) {
    if (m_loader->isLoading())
      m_welcome->showMessage(tr("Another model is loading; choose again when it is done."), false);
    else
      loadModel(path);
  });
  connect(m_welcome, &WelcomeView::openFileRequested, this, [this] {
    m_loader->chooseAndLoad(m_session.settings().engineConfig(), QString::fromStdString(pagedchat::models_dir()));
  });
  connect(m_welcome, &WelcomeView::libraryRequested, this, &MainWindow::showModelLibrary);
  connect(m_loader, &ModelLoader::ended, this, [this](bool ok, const QString& message) {
    if (!ok && !m_session.hasModel())
      showWelcome(message.isEmpty() ? tr("Loading cancelled.") : tr("The model could not be loaded: %1").arg(message), !message.isEmpty());
  });
}

void MainWindow::showWelcome(const QString& message, bool error) {
  m_central->setCurrentWidget(m_welcome);
  m_status->setText(tr("No model loaded"));
  m_welcome->showMessage(message, error);
  m_welcome->refresh(modelFolders(), m_loader->recentModels());
}

ModelLibraryDialog* MainWindow::modelLibrary() const { return m_library.data(); }

void MainWindow::openAtStart(const QString& requested, int threads) {
  if (!requested.isEmpty()) return loadModel(requested, threads);
  QString gone;
  const QString path = m_session.modelLoad().modelAtStart(QString::fromStdString(pagedchat::default_model_path()), &gone);
  if (!path.isEmpty()) return loadModel(path, threads);
  // The page lists the models found on this machine: the one to open instead is a click away.
  showWelcome(gone.isEmpty() ? QString() : tr("The model used last is no longer there: %1. Choose another below.").arg(gone), !gone.isEmpty());
}

bool MainWindow::welcomeShown() const { return m_central->currentWidget() == m_welcome; }

void MainWindow::showModelLibrary() {
  if (m_library) {
    m_library->setRecent(m_loader->recentModels());
    m_library->rescan();
    m_library->show();
    m_library->raise();
    m_library->activateWindow();
    return;
  }
  m_library = new ModelLibraryDialog(modelFolders(), m_loader->recentModels(), m_loader->currentPath(),
                                     QString::fromStdString(pagedchat::models_dir()), this);
  connect(m_library, &ModelLibraryDialog::foldersChanged, this, [this](const QStringList& folders) {
    setModelFolders(folders);
    if (welcomeShown()) m_welcome->refresh(folders, m_loader->recentModels());
  });
  connect(m_library, &ModelLibraryDialog::loadRequested, this, [this](const QString& path) { loadModel(path); });
  m_library->show();
}
