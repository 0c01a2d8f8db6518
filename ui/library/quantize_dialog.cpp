// The Quantize dialog of the model library (see quantize_dialog.h).
#include "ui/library/quantize_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include "appcore/library/model_quantization.h"
#include "ui/theme/app_theme.h"

QuantizeDialog::QuantizeDialog(const QString& source, const QString& modelsDir, QWidget* parent)
    : QDialog(parent), m_source(source), m_modelsDir(modelsDir) {
  setObjectName(QStringLiteral("quantizeDialog"));
  setWindowTitle(tr("Quantize %1").arg(QFileInfo(source).fileName()));
  resize(720, 360);
  m_job = new ModelQuantization(this);
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  auto* sourceLabel = new QLabel(QFileInfo(source).fileName(), this);
  sourceLabel->setToolTip(source);
  form->addRow(tr("Model"), sourceLabel);
  m_type = new QComboBox(this);
  m_type->setObjectName(QStringLiteral("quantizeType"));
  for (const auto& [name, description] : ModelQuantization::fileTypes()) m_type->addItem(name + " — " + description, name);
  m_type->setCurrentIndex(m_type->findData(QStringLiteral("Q4_K_M")));
  form->addRow(tr("Type"), m_type);
  auto* calibrationRow = new QHBoxLayout;
  m_calibration = new QLineEdit(this);
  m_calibration->setObjectName(QStringLiteral("quantizeCalibration"));
  m_calibration->setPlaceholderText(tr("Optional: a text the model should read well (better at 4 bits and below)"));
  auto* browse = new QPushButton(tr("Choose…"), this);
  calibrationRow->addWidget(m_calibration, 1);
  calibrationRow->addWidget(browse);
  form->addRow(tr("Calibration text"), calibrationRow);
  m_output = new QLineEdit(this);
  m_output->setObjectName(QStringLiteral("quantizeOutput"));
  form->addRow(tr("Save as"), m_output);
  v->addLayout(form);
  m_warning = new QLabel(ModelQuantization::requantizeWarning(source), this);
  m_warning->setObjectName(QStringLiteral("quantizeWarning"));
  m_warning->setWordWrap(true);
  m_warning->setVisible(!m_warning->text().isEmpty());
  v->addWidget(m_warning);
  m_requantize = new QCheckBox(tr("Quantize it anyway"), this);
  m_requantize->setObjectName(QStringLiteral("quantizeAnyway"));
  m_requantize->setVisible(m_warning->isVisible());
  v->addWidget(m_requantize);
  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("quantizeProgress"));
  m_progress->setRange(0, 1000);
  v->addWidget(m_progress);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("quantizeMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_message, 1);
  auto* buttons = new QHBoxLayout;
  m_start = new QPushButton(tr("Quantize"), this);
  m_start->setObjectName(QStringLiteral("quantizeStart"));
  m_start->setDefault(true);
  m_cancel = new QPushButton(tr("Cancel"), this);
  m_cancel->setObjectName(QStringLiteral("quantizeCancel"));
  m_close = new QPushButton(tr("Close"), this);
  buttons->addStretch(1);
  buttons->addWidget(m_start);
  buttons->addWidget(m_cancel);
  buttons->addWidget(m_close);
  v->addLayout(buttons);

  auto refreshOutput = [this] {
    m_output->setText(ModelQuantization::defaultOutput(m_source, m_type->currentData().toString(), m_modelsDir));
  };
  refreshOutput();
  connect(m_type, &QComboBox::currentIndexChanged, this, refreshOutput);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("A calibration text"), QString(), tr("Text (*.txt *.md);;All files (*)"));
    if (!path.isEmpty()) m_calibration->setText(path);
  });
  connect(m_requantize, &QCheckBox::toggled, this, &QuantizeDialog::updateButtons);
  connect(m_start, &QPushButton::clicked, this, &QuantizeDialog::start);
  connect(m_cancel, &QPushButton::clicked, m_job, &ModelQuantization::cancel);
  connect(m_close, &QPushButton::clicked, this, &QDialog::close);
  connect(m_job, &ModelQuantization::progress, this, [this](const QString& stage, double fraction) {
    m_progress->setValue(static_cast<int>(fraction * 1000));
    say(stage);
  });
  connect(m_job, &ModelQuantization::finished, this, [this](const QString& path, const QString& summary) {
    m_progress->setValue(1000);
    say(tr("Done. %1\nSaved as %2; it is listed in the library.").arg(summary, path));
    updateButtons();
    emit quantized(path);
  });
  connect(m_job, &ModelQuantization::failed, this, [this](const QString& message) {
    m_progress->setValue(0);
    say(tr("Not quantized: %1").arg(message), true);
    updateButtons();
  });
  connect(m_job, &ModelQuantization::cancelled, this, [this] {
    m_progress->setValue(0);
    say(tr("Cancelled; nothing was written."));
    updateButtons();
  });
  updateButtons();
}

void QuantizeDialog::setType(const QString& type) { m_type->setCurrentIndex(m_type->findData(type)); }
void QuantizeDialog::setCalibrationText(const QString& path) { m_calibration->setText(path); }
QString QuantizeDialog::outputPath() const { return m_output->text(); }
QString QuantizeDialog::message() const { return m_message->text(); }

void QuantizeDialog::start() {
  if (m_job->isRunning()) return;
  ModelQuantization::Request r;
  r.source = m_source;
  r.output = m_output->text().trimmed();
  r.type = m_type->currentData().toString();
  r.calibrationText = m_calibration->text().trimmed();
  r.allowRequantize = m_requantize->isChecked();
  if (r.output.isEmpty()) return say(tr("Say where to save it."), true);
  if (QFileInfo(r.output).absoluteFilePath() == QFileInfo(m_source).absoluteFilePath())
    return say(tr("That would replace the model itself; choose another name."), true);
  if (QFileInfo::exists(r.output)) return say(tr("%1 exists already; choose another name.").arg(r.output), true);
  m_progress->setValue(0);
  say(tr("Starting…"));
  m_job->start(r);
  updateButtons();
}

void QuantizeDialog::updateButtons() {
  const bool running = m_job->isRunning();
  m_start->setEnabled(!running && (m_warning->text().isEmpty() || m_requantize->isChecked()));
  m_cancel->setEnabled(running);
  m_type->setEnabled(!running);
  m_output->setEnabled(!running);
  m_calibration->setEnabled(!running);
}

void QuantizeDialog::say(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(textColors().error.name()) : QString());
}
