// A form of labels, word-wrapped so a long path or template reason fits a small screen.
#include "ui/dialogs/model_info_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

ModelInfoDialog::ModelInfoDialog(const ModelInfo& info, QWidget* parent) : QDialog(parent) {
  setObjectName(QStringLiteral("modelInfoDialog"));
  setWindowTitle(tr("Model information"));
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);
  for (const auto& [label, value] : info.rows()) {
    auto* field = new QLabel(value.toHtmlEscaped(), this);
    field->setObjectName(QStringLiteral("modelInfo_") + QString(label).remove(QLatin1Char(' ')).toLower());
    field->setTextInteractionFlags(Qt::TextSelectableByMouse);
    field->setWordWrap(true);
    form->addRow(label, field);
  }
  v->addLayout(form);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  QPushButton* copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
  copy->setObjectName(QStringLiteral("copyModelInfo"));
  connect(copy, &QPushButton::clicked, this, [info] { QApplication::clipboard()->setText(asText(info)); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);
  resize(560, sizeHint().height());
}

QString ModelInfoDialog::asText(const ModelInfo& info) {
  QStringList lines;
  for (const auto& [label, value] : info.rows()) lines << QStringLiteral("%1: %2").arg(label, value);
  return lines.join(QLatin1Char('\n'));
}
