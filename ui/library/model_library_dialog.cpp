// The model library dialog (see model_library_dialog.h).
#include "ui/library/model_library_dialog.h"

#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QUrl>
#include <QVBoxLayout>

#include "models/model_summary.h"
#include "appcore/library/model_download.h"
#include "ui/library/hub_search_box.h"
#include "ui/library/model_list_widget.h"
#include "ui/library/quantize_dialog.h"
#include "ui/theme/app_theme.h"

ModelLibraryDialog::ModelLibraryDialog(const QStringList& folders, const QStringList& recent, const QString& inUse,
                                       const QString& modelsDir, QWidget* parent)
    : QDialog(parent), m_folders(folders), m_recent(recent), m_modelsDir(modelsDir), m_inUse(inUse) {
  setObjectName(QStringLiteral("modelLibrary"));
  setWindowTitle(tr("Model library"));
  resize(1100, 640);
  m_download = new ModelDownload(this);
  auto* v = new QVBoxLayout(this);
  // The models here, or the hub searched by name: a file chosen there goes to the download below.
  m_tabs = new QTabWidget(this);
  m_tabs->setObjectName(QStringLiteral("libraryTabs"));
  auto* here = new QWidget(m_tabs);
  auto* hv = new QVBoxLayout(here);
  hv->setContentsMargins(0, 0, 0, 0);
  m_list = new ModelListWidget(here);
  m_list->setModelInUse(inUse);
  hv->addWidget(m_list, 1);
  hv->addWidget(m_list->createDetailLabel(here, QStringLiteral("libraryModelDetail")));
  hv->addLayout(buildActionRow());
  m_tabs->addTab(here, tr("On this machine"));
  m_hubSearch = new HubSearchBox(m_tabs);
  m_tabs->addTab(m_hubSearch, tr("Find on Hugging Face"));
  connect(m_hubSearch, &HubSearchBox::fileChosen, this, [this](const QString& repo, const QString& file, const QString& fit) {
    m_repo->setText(repo);
    m_file->setText(file);
    say(tr("%1 — %2. Download gets it.").arg(file, fit));
  });
  v->addWidget(m_tabs, 1);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(buildFoldersBox(), 1);
  bottom->addWidget(buildHubBox(), 1);
  v->addLayout(bottom);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("libraryMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_message);

  connect(m_list, &ModelListWidget::modelActivated, this, &ModelLibraryDialog::loadRequested);
  connect(m_list, &QTreeWidget::currentItemChanged, this, &ModelLibraryDialog::updateButtons);
  connect(m_list, &ModelListWidget::scanned, this, [this](int n) {
    say(n == 1 ? tr("1 model file found.") : tr("%1 model files found.").arg(n));
    updateButtons();
  });
  connectDownload();
  rescan();
  updateButtons();
}

// Load, Show in file manager, Delete, Quantize, Rescan: on the model selected in the list.
QLayout* ModelLibraryDialog::buildActionRow() {
  auto* actions = new QHBoxLayout;
  m_load = new QPushButton(tr("Load"), this);
  m_load->setObjectName(QStringLiteral("libraryLoad"));
  m_reveal = new QPushButton(tr("Show in file manager"), this);
  m_reveal->setObjectName(QStringLiteral("libraryReveal"));
  m_delete = new QPushButton(tr("Delete…"), this);
  m_delete->setObjectName(QStringLiteral("libraryDelete"));
  m_delete->setToolTip(tr("Deletes a model in PagedChat's own folder, downloaded or quantized here (files of other "
                          "tools are left alone)"));
  m_quantize = new QPushButton(tr("Quantize…"), this);
  m_quantize->setObjectName(QStringLiteral("libraryQuantize"));
  m_quantize->setToolTip(tr("Writes the model in a smaller type (Q4_K_M, Q8_0, …) into PagedChat's models folder"));
  auto* rescanButton = new QPushButton(tr("Rescan"), this);
  actions->addWidget(m_load);
  actions->addWidget(m_reveal);
  actions->addWidget(m_delete);
  actions->addWidget(m_quantize);
  actions->addStretch(1);
  actions->addWidget(rescanButton);
  connect(m_load, &QPushButton::clicked, this, [this] {
    if (m_list->selectedSupported()) emit loadRequested(m_list->selectedPath());
  });
  connect(m_reveal, &QPushButton::clicked, this, [this] {
    QDesktopServices::openUrl(QUrl::fromLocalFile(QFileInfo(m_list->selectedPath()).absolutePath()));
  });
  connect(m_delete, &QPushButton::clicked, this, [this] {
    const QString path = m_list->selectedPath();
    if (QMessageBox::question(this, tr("Delete the model?"),
                              tr("Delete %1 (%2)? A downloaded model can be downloaded again; a copy quantized here would have to be "
                                 "quantized again.")
                                  .arg(QFileInfo(path).fileName(),
                                       QString::fromStdString(pagedchat::models::format_bytes(QFileInfo(path).size())))) ==
        QMessageBox::Yes)
      deleteModel(path);
  });
  connect(m_quantize, &QPushButton::clicked, this, [this] { openQuantize(m_list->selectedPath()); });
  connect(rescanButton, &QPushButton::clicked, this, &ModelLibraryDialog::rescan);
  return actions;
}

// The folders the user added, searched as well as the known ones.
QWidget* ModelLibraryDialog::buildFoldersBox() {
  auto* foldersBox = new QGroupBox(tr("Your folders (searched for *.gguf)"), this);
  auto* fv = new QVBoxLayout(foldersBox);
  m_folderList = new QListWidget(foldersBox);
  m_folderList->setObjectName(QStringLiteral("libraryFolders"));
  m_folderList->addItems(m_folders);
  m_folderList->setMaximumHeight(90);
  fv->addWidget(m_folderList);
  auto* fh = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add folder…"), foldersBox);
  m_removeFolder = new QPushButton(tr("Remove"), foldersBox);
  fh->addWidget(add);
  fh->addWidget(m_removeFolder);
  fh->addStretch(1);
  fv->addLayout(fh);
  connect(add, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("A folder with GGUF models"), QDir::homePath());
    if (!dir.isEmpty()) addFolder(dir);
  });
  connect(m_removeFolder, &QPushButton::clicked, this, [this] {
    if (auto* item = m_folderList->currentItem()) {
      m_folders.removeAll(item->text());
      delete item;
      emit foldersChanged(m_folders);
      rescan();
    }
  });
  connect(m_folderList, &QListWidget::currentItemChanged, this, &ModelLibraryDialog::updateButtons);
  return foldersBox;
}

// A repository and a file name, Download, its progress, Cancel.
QWidget* ModelLibraryDialog::buildHubBox() {
  auto* hubBox = new QGroupBox(tr("Download from Hugging Face"), this);
  auto* form = new QFormLayout(hubBox);
  m_repo = new QLineEdit(hubBox);
  m_repo->setObjectName(QStringLiteral("hubRepo"));
  m_repo->setPlaceholderText(tr("owner/Model-GGUF, as in the hub's URL"));
  m_file = new QLineEdit(hubBox);
  m_file->setObjectName(QStringLiteral("hubFile"));
  m_file->setPlaceholderText(tr("Model-Q4_K_M.gguf (a file of that repository)"));
  form->addRow(tr("Repository"), m_repo);
  form->addRow(tr("File"), m_file);
  auto* hh = new QHBoxLayout;
  m_hubGet = new QPushButton(tr("Download"), hubBox);
  m_hubGet->setObjectName(QStringLiteral("hubDownload"));
  m_hubCancel = new QPushButton(tr("Cancel"), hubBox);
  m_hubCancel->setObjectName(QStringLiteral("hubCancel"));
  m_progress = new QProgressBar(hubBox);
  m_progress->setObjectName(QStringLiteral("hubProgress"));
  m_progress->setRange(0, 1000);
  hh->addWidget(m_hubGet);
  hh->addWidget(m_progress, 1);
  hh->addWidget(m_hubCancel);
  form->addRow(hh);
  connect(m_hubGet, &QPushButton::clicked, this, [this] { downloadFromHub(m_repo->text().trimmed(), m_file->text().trimmed()); });
  connect(m_hubCancel, &QPushButton::clicked, m_download, &ModelDownload::cancel);
  return hubBox;
}

// What the download says, in the progress bar and the message line.
void ModelLibraryDialog::connectDownload() {
  connect(m_download, &ModelDownload::progress, this, [this](qint64 received, qint64 total) {
    m_progress->setValue(total ? static_cast<int>(1000 * received / total) : 0);
    say(ModelDownload::progressText(received, total));
  });
  connect(m_download, &ModelDownload::finished, this, [this](const QString& path) {
    m_progress->setValue(1000);
    say(tr("Downloaded and checked: %1").arg(path));
    updateButtons();
    rescan();
  });
  connect(m_download, &ModelDownload::failed, this, [this](const QString& message) {
    say(tr("The download did not complete: %1").arg(message), true);
    updateButtons();
  });
  connect(m_download, &ModelDownload::cancelled, this, [this] {
    say(tr("Cancelled; a new Download of the same file continues where it stopped."));
    updateButtons();
  });
}

void ModelLibraryDialog::setRecent(const QStringList& recent) { m_recent = recent; }

QString ModelLibraryDialog::message() const { return m_message->text(); }

void ModelLibraryDialog::say(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(textColors().error.name()) : QString());
}

QuantizeDialog* ModelLibraryDialog::openQuantize(const QString& path) {
  if (path.isEmpty()) return nullptr;
  auto* dialog = new QuantizeDialog(path, m_modelsDir, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QuantizeDialog::quantized, this, [this](const QString& out) {
    say(tr("Quantized: %1").arg(out));
    rescan();
  });
  dialog->show();
  return dialog;
}

void ModelLibraryDialog::rescan() {
  say(tr("Looking for models…"));
  m_list->refresh(m_folders, m_recent);
}

void ModelLibraryDialog::addFolder(const QString& dir) {
  const QString clean = QDir::cleanPath(dir);
  if (m_folders.contains(clean)) return;
  m_folders.append(clean);
  m_folderList->addItem(clean);
  emit foldersChanged(m_folders);
  rescan();
}

void ModelLibraryDialog::downloadFromHub(const QString& repo, const QString& file) {
  if (m_download->isRunning()) return;
  pagedchat::models::HubFile f{repo.toStdString(), file.toStdString(), "main"};
  try {
    pagedchat::models::check_hub_file(f);
  } catch (const std::exception& e) {
    say(QString::fromUtf8(e.what()), true);
    return;
  }
  m_progress->setValue(0);
  say(tr("Asking the hub about %1…").arg(file));
  m_download->startHub(f, m_modelsDir);
  updateButtons();
}

bool ModelLibraryDialog::deleteModel(const QString& path) {
  const QString file = QFileInfo(path).canonicalFilePath();
  const QString dir = QFileInfo(m_modelsDir).canonicalFilePath();
  if (file.isEmpty() || dir.isEmpty() || !file.startsWith(dir + QLatin1Char('/'))) {
    say(tr("%1 is not in PagedChat's models folder (%2): it belongs to another tool, so it is left alone.")
            .arg(path, m_modelsDir),
        true);
    return false;
  }
  if (!m_inUse.isEmpty() && QFileInfo(m_inUse).canonicalFilePath() == file) {
    say(tr("%1 is the model in use: open another one first.").arg(QFileInfo(file).fileName()), true);
    return false;
  }
  if (!QFile::remove(file)) {
    say(tr("%1 could not be deleted.").arg(file), true);
    return false;
  }
  say(tr("Deleted %1.").arg(QFileInfo(file).fileName()));
  rescan();
  return true;
}

void ModelLibraryDialog::setModelInUse(const QString& path) {
  m_inUse = path;
  m_list->setModelInUse(path);
}

void ModelLibraryDialog::updateButtons() {
  const QString path = m_list->selectedPath();
  m_load->setEnabled(m_list->selectedSupported());
  m_reveal->setEnabled(!path.isEmpty());
  m_quantize->setEnabled(!path.isEmpty());
  const QString dir = QFileInfo(m_modelsDir).canonicalFilePath();
  m_delete->setEnabled(!path.isEmpty() && !dir.isEmpty() && QFileInfo(path).canonicalFilePath().startsWith(dir + QLatin1Char('/')));
  m_removeFolder->setEnabled(m_folderList->currentItem() != nullptr);
  const bool running = m_download->isRunning();
  m_hubGet->setEnabled(!running);
  m_hubCancel->setEnabled(running);
}
