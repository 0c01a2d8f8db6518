// The first main window: one chat streamed from the engine worker.
#include "ui/chat_window.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStatusBar>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "ui/engine_worker.h"

ChatWindow::ChatWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("PagedChat"));
  resize(900, 640);
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  m_transcript = new QTextBrowser(central);
  m_transcript->setObjectName(QStringLiteral("transcript"));
  m_transcript->setOpenExternalLinks(false);
  layout->addWidget(m_transcript, 1);
  auto* row = new QHBoxLayout();
  m_input = new QLineEdit(central);
  m_input->setObjectName(QStringLiteral("input"));
  m_input->setPlaceholderText(tr("Loading the model…"));
  m_input->setEnabled(false);
  m_send = new QPushButton(tr("Send"), central);
  m_send->setObjectName(QStringLiteral("send"));
  m_send->setEnabled(false);
  m_stop = new QPushButton(tr("Stop"), central);
  m_stop->setEnabled(false);
  row->addWidget(m_input, 1);
  row->addWidget(m_send);
  row->addWidget(m_stop);
  layout->addLayout(row);
  setCentralWidget(central);
  m_status = new QLabel(tr("No model"), this);
  m_status->setObjectName(QStringLiteral("status"));
  statusBar()->addWidget(m_status, 1);

  m_worker = new EngineWorker();
  m_worker->moveToThread(&m_engineThread);
  connect(&m_engineThread, &QThread::finished, m_worker, &QObject::deleteLater);
  m_engineThread.start();

  connect(m_input, &QLineEdit::returnPressed, this, &ChatWindow::send);
  connect(m_send, &QPushButton::clicked, this, &ChatWindow::send);
  connect(m_stop, &QPushButton::clicked, this, [this] { m_worker->requestStop(); });
  connect(m_worker, &EngineWorker::modelLoaded, this, [this](const QString& d) {
    m_status->setText(d);
    m_input->setEnabled(true);
    m_send->setEnabled(true);
    m_input->setPlaceholderText(tr("Type a message and press Enter"));
    m_input->setFocus();
    emit modelReady();
  });
  connect(m_worker, &EngineWorker::modelFailed, this, [this](const QString& e) {
    m_status->setText(tr("Could not load the model: %1").arg(e));
    if (!m_input->isEnabled()) m_input->setPlaceholderText(tr("No model loaded"));
  });
  // Tokens arrive faster than a person reads: the transcript is redrawn at most every 33 ms.
  m_renderTimer.setSingleShot(true);
  m_renderTimer.setInterval(33);
  connect(&m_renderTimer, &QTimer::timeout, this, &ChatWindow::render);
  connect(m_worker, &EngineWorker::replyText, this, [this](const QString& t) {
    m_messages.last().second += t;
    if (!m_renderTimer.isActive()) m_renderTimer.start();
  });
  auto finish = [this](const QString& status) {
    m_generating = false;
    m_send->setEnabled(true);
    m_stop->setEnabled(false);
    m_status->setText(status);
    m_renderTimer.stop();
    render();
    emit replyDone();
  };
  connect(m_worker, &EngineWorker::replyFinished, this, finish);
  connect(m_worker, &EngineWorker::replyFailed, this, [finish](const QString& e) { finish(tr("Error: %1").arg(e)); });
}

ChatWindow::~ChatWindow() {
  m_worker->requestStop();
  m_engineThread.quit();
  m_engineThread.wait();
}

void ChatWindow::loadModel(const QString& path, int threads) {
  m_status->setText(tr("Loading %1…").arg(path));
  QMetaObject::invokeMethod(m_worker, [w = m_worker, path, threads] { w->loadModel(path, threads); },
                            Qt::QueuedConnection);
}

void ChatWindow::send() {
  const QString text = m_input->text().trimmed();
  if (text.isEmpty() || m_generating) return;
  m_input->clear();
  m_messages.append({QStringLiteral("user"), text});
  auto history = m_messages;
  m_messages.append({QStringLiteral("assistant"), QString()});
  m_generating = true;
  m_send->setEnabled(false);
  m_stop->setEnabled(true);
  render();
  QMetaObject::invokeMethod(m_worker, [w = m_worker, history] { w->generate(history, 0.7, 512); },
                            Qt::QueuedConnection);
}

void ChatWindow::render() {
  QString html;
  for (const auto& [role, content] : m_messages) {
    html += QStringLiteral("<p><b>%1</b><br>%2</p>")
                .arg(role == QLatin1String("user") ? tr("You") : tr("Assistant"),
                     content.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")));
  }
  m_transcript->setHtml(html);
  m_transcript->moveCursor(QTextCursor::End);
}
