// The request log, as a table that grows as requests end.
#include "ui/dialogs/api_request_log_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include "appcore/bridge/local_api_server.h"

ApiRequestLogDialog::ApiRequestLogDialog(const LocalApiServer& server, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("apiRequestLog"));
  setWindowTitle(tr("API request log"));
  resize(760, 420);
  auto* v = new QVBoxLayout(this);
  auto* note = new QLabel(tr("Requests to this app's API (Serve API), as each response ends; the last %1 are kept while "
                             "the app runs.").arg(LocalApiServer::kLogLength),
                          this);
  note->setWordWrap(true);
  v->addWidget(note);
  m_table = new QTableWidget(0, 5, this);
  m_table->setObjectName(QStringLiteral("apiRequestTable"));
  m_table->setHorizontalHeaderLabels({tr("Time"), tr("Request"), tr("Status"), tr("Tokens"), tr("Took")});
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  m_table->horizontalHeader()->setSectionResizeMode(3, QHeaderView::ResizeToContents);
  v->addWidget(m_table, 1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  auto* clear = buttons->addButton(tr("Clear view"), QDialogButtonBox::ResetRole);
  connect(clear, &QPushButton::clicked, this, [this] { m_table->setRowCount(0); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);
  for (const ApiLogEntry& e : server.log()) append(e);
  connect(&server, &LocalApiServer::requestLogged, this, &ApiRequestLogDialog::append);
}

void ApiRequestLogDialog::append(const ApiLogEntry& e) {
  const QLocale locale;
  QScrollBar* scroll = m_table->verticalScrollBar();
  const bool atEnd = scroll->value() == scroll->maximum();  // a reader scrolled up is left where they are
  const int row = m_table->rowCount();
  m_table->insertRow(row);
  QString tokens;
  if (e.promptTokens >= 0) {
    tokens = tr("%1 in → %2 out").arg(locale.toString(e.promptTokens), locale.toString(std::max<int64_t>(e.completionTokens, 0)));
    if (e.cachedTokens > 0) tokens += tr(" (%1 cached)").arg(locale.toString(e.cachedTokens));
  }
  QString status = QString::number(e.status);
  if (e.status == ApiLogEntry::kClientLeft) status = tr("499 client left");
  const QStringList cells{e.at.toString(QStringLiteral("HH:mm:ss")), e.method + QLatin1Char(' ') + e.path + (e.stream ? tr(" (stream)") : QString()),
                          status, tokens, tr("%1 ms").arg(locale.toString(e.durationMs))};
  for (int c = 0; c < cells.size(); ++c) {
    auto* item = new QTableWidgetItem(cells[c]);
    if (c == 2 && e.status >= 400) item->setForeground(QColor(0xc0, 0x39, 0x2b));
    m_table->setItem(row, c, item);
  }
  m_table->resizeColumnToContents(0);
  if (atEnd) m_table->scrollToBottom();
}
