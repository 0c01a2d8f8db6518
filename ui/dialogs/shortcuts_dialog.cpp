// The keyboard shortcuts, listed from the actions themselves.
#include "ui/dialogs/shortcuts_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

ShortcutsDialog::ShortcutsDialog(const QList<QAction*>& actions, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("shortcutsDialog"));
  setWindowTitle(tr("Keyboard shortcuts"));
  auto* table = new QTableWidget(this);
  table->setColumnCount(2);
  table->setHorizontalHeaderLabels({tr("Action"), tr("Keys")});
  table->verticalHeader()->hide();
  table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  QVector<std::pair<QString, QString>> rows;
  for (const QAction* a : actions) {
    if (a->shortcuts().isEmpty() || a->text().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    QString text = a->text().remove(QLatin1Char('&'));
    if (text.endsWith(QStringLiteral("…"))) text.chop(1);
    rows.append({text, keys.join(tr(" or "))});
  }
  rows.append({tr("Leave the message input (and come back)"), tr("Tab, Shift+Tab")});
  rows.append({tr("Rename the chat in the list"), tr("double-click")});
  rows.append({tr("Clear the search"), tr("Esc in the search box")});
  table->setRowCount(static_cast<int>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    table->setItem(i, 0, new QTableWidgetItem(rows[i].first));
    table->setItem(i, 1, new QTableWidgetItem(rows[i].second));
  }
  table->resizeColumnToContents(1);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* v = new QVBoxLayout(this);
  v->addWidget(table);
  v->addWidget(buttons);
  resize(520, 560);
}
