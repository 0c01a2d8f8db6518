#include "ui/remote/remote_engines_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QCoreApplication>
#include <QPointer>
#include <QPushButton>
#include <QThread>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "remote/openai_client.h"
#include "appcore/remote/remote_endpoints.h"

RemoteEnginesDialog::RemoteEnginesDialog(RemoteEndpoints& endpoints, QWidget* parent) : QDialog(parent), m_endpoints(endpoints) {
  setObjectName(QStringLiteral("remoteEnginesDialog"));
  setWindowTitle(tr("Remote engines"));
  auto* v = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("Run chats on an OpenAI-compatible server elsewhere: a vLLM deployment, llama.cpp's llama-server, "
                              "another PagedChat (pagedchat-server). Pick one for a chat under Chat > Run this chat on. The key is "
                              "kept in a file only you can read, never in the chats' database."),
                           this);
  intro->setWordWrap(true);
  v->addWidget(intro);
  auto* form = new QFormLayout;
  m_url = new QLineEdit(this);
  m_url->setObjectName(QStringLiteral("remoteUrl"));
  m_url->setPlaceholderText(QStringLiteral("http://gpu-box:8000"));
  m_key = new QLineEdit(this);
  m_key->setObjectName(QStringLiteral("remoteKey"));
  m_key->setEchoMode(QLineEdit::Password);
  m_key->setPlaceholderText(tr("none"));
  form->addRow(tr("Server URL:"), m_url);
  form->addRow(tr("API key:"), m_key);
  v->addLayout(form);
  auto* row = new QHBoxLayout;
  m_add = new QPushButton(tr("Add"), this);
  m_add->setObjectName(QStringLiteral("addRemote"));
  m_remove = new QPushButton(tr("Remove"), this);
  m_remove->setObjectName(QStringLiteral("removeRemote"));
  row->addWidget(m_add);
  row->addWidget(m_remove);
  row->addStretch(1);
  v->addLayout(row);
  m_note = new QLabel(this);
  m_note->setObjectName(QStringLiteral("remoteNote"));
  m_note->setWordWrap(true);
  v->addWidget(m_note);
  m_list = new QTreeWidget(this);
  m_list->setObjectName(QStringLiteral("remoteList"));
  m_list->setHeaderLabels({tr("Server and its models")});
  m_list->header()->setStretchLastSection(true);
  v->addWidget(m_list, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);
  connect(m_add, &QPushButton::clicked, this, [this] { addEndpoint(m_url->text().trimmed(), m_key->text()); });
  connect(m_remove, &QPushButton::clicked, this, [this] {
    QTreeWidgetItem* item = m_list->currentItem();
    while (item && item->parent()) item = item->parent();
    if (item) m_endpoints.remove(item->text(0));
  });
  connect(&m_endpoints, &RemoteEndpoints::changed, this, &RemoteEnginesDialog::fill);
  fill();
  resize(560, 420);
}

void RemoteEnginesDialog::fill() {
  m_list->clear();
  for (const RemoteEndpointEntry& e : m_endpoints.entries()) {
    auto* top = new QTreeWidgetItem(m_list, {e.url});
    for (const QString& m : e.models) new QTreeWidgetItem(top, {m});
    top->setExpanded(true);
  }
  m_remove->setEnabled(!m_endpoints.entries().isEmpty());
}

void RemoteEnginesDialog::setBusy(bool busy) {
  m_add->setEnabled(!busy);
  m_url->setEnabled(!busy);
  m_key->setEnabled(!busy);
}

void RemoteEnginesDialog::addEndpoint(const QString& url, const QString& apiKey) {
  if (url.isEmpty()) {
    m_note->setText(tr("Give the server's URL, as http://host:port."));
    return emit checked(false);
  }
  setBusy(true);
  m_note->setText(tr("Asking %1 for its models…").arg(url));
  QPointer<RemoteEnginesDialog> self(this);
  // The request blocks (up to its connect timeout): on a thread of its own, the answer handed back.
  QThread* worker = QThread::create([self, url, apiKey, stop = m_stop] {
    const pagedchat::remote::RemoteModels models = pagedchat::remote::list_models({url.toStdString(), apiKey.toStdString()}, stop.get());
    QMetaObject::invokeMethod(qApp, [self, url, apiKey, models] {
      if (!self) return;
      self->setBusy(false);
      if (!models.error.ok()) {
        self->m_note->setText(QString::fromStdString(models.error.sentence()));
        return emit self->checked(false);
      }
      QStringList ids;
      for (const std::string& id : models.ids) ids << QString::fromStdString(id);
      self->m_endpoints.set(url, ids, apiKey);
      self->m_note->setText(ids.size() == 1 ? tr("%1 serves 1 model.").arg(url) : tr("%1 serves %2 models.").arg(url).arg(ids.size()));
      self->m_key->clear();
      emit self->checked(true);
    }, Qt::QueuedConnection);
  });
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  m_worker = worker;
  worker->start();
}

RemoteEnginesDialog::~RemoteEnginesDialog() {
  // Closed (or the app quitting) while a server is asked: the request is cut short, not left
  // running past the window.
  m_stop->store(true);
  if (m_worker) m_worker->wait();
}
