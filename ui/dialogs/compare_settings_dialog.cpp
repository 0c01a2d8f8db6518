// A table of spin boxes, one row per compare column.
#include "ui/dialogs/compare_settings_dialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace {
enum Column { kTemperature, kTopP, kTopK, kSeed, kNumColumns };
}

QString describeSampling(const TurnSettings& s) {
  QStringList parts{s.temperature == 0 ? QObject::tr("greedy") : QObject::tr("T %1").arg(s.temperature)};
  if (s.temperature > 0 && s.topP < 1) parts << QObject::tr("top-p %1").arg(s.topP);
  if (s.temperature > 0 && s.topK > 0) parts << QObject::tr("top-k %1").arg(s.topK);
  if (s.temperature > 0 && s.seed != 0) parts << QObject::tr("seed %1").arg(s.seed);
  return parts.join(QStringLiteral(" · "));
}

CompareSettingsDialog::CompareSettingsDialog(const std::vector<TurnSettings>& columns, QWidget* parent)
    : QDialog(parent), m_initial(columns) {
  setWindowTitle(tr("Compare columns"));
  setObjectName(QStringLiteral("compareSettingsDialog"));
  auto* v = new QVBoxLayout(this);
  v->addWidget(new QLabel(tr("With \"Vary settings\", sample column k uses row k (the prompt is computed once):"), this));
  m_table = new QTableWidget(static_cast<int>(columns.size()), kNumColumns, this);
  m_table->setObjectName(QStringLiteral("compareColumns"));
  m_table->setHorizontalHeaderLabels({tr("Temperature"), tr("Top-p"), tr("Top-k (0: off)"), tr("Seed (0: random)")});
  for (int row = 0; row < m_table->rowCount(); ++row) {
    const TurnSettings& s = columns[static_cast<size_t>(row)];
    m_table->setVerticalHeaderItem(row, new QTableWidgetItem(tr("Column %1").arg(row + 1)));
    auto* t = new QDoubleSpinBox(m_table);
    t->setRange(0, 5);
    t->setSingleStep(0.1);
    t->setValue(s.temperature);
    auto* p = new QDoubleSpinBox(m_table);
    p->setRange(0, 1);
    p->setSingleStep(0.05);
    p->setValue(s.topP);
    auto* k = new QSpinBox(m_table);
    k->setRange(0, 1000);
    k->setValue(s.topK);
    auto* seed = new QSpinBox(m_table);
    seed->setRange(0, 2147483647);
    seed->setValue(static_cast<int>(std::min<quint64>(s.seed, 2147483647)));
    m_table->setCellWidget(row, kTemperature, t);
    m_table->setCellWidget(row, kTopP, p);
    m_table->setCellWidget(row, kTopK, k);
    m_table->setCellWidget(row, kSeed, seed);
  }
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  v->addWidget(m_table);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);
  resize(560, 240);
}

std::vector<TurnSettings> CompareSettingsDialog::columns() const {
  std::vector<TurnSettings> out = m_initial;
  for (int row = 0; row < m_table->rowCount(); ++row) {
    TurnSettings& s = out[static_cast<size_t>(row)];
    s.temperature = qobject_cast<QDoubleSpinBox*>(m_table->cellWidget(row, kTemperature))->value();
    s.topP = qobject_cast<QDoubleSpinBox*>(m_table->cellWidget(row, kTopP))->value();
    s.topK = qobject_cast<QSpinBox*>(m_table->cellWidget(row, kTopK))->value();
    s.seed = static_cast<quint64>(qobject_cast<QSpinBox*>(m_table->cellWidget(row, kSeed))->value());
  }
  return out;
}
