// The Quantize dialog of the model library (see quantize_dialog.h).
#include "ui/library/quantize_dialog.h"

#include <QCheckBox>
#include <QCloseEvent>
#include <QMessageBox>
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
  auto* intro = new QLabel(tr("Writes a copy of the model with smaller weights: a smaller file that runs faster and "
                              "answers a little less well. The copy goes into PagedChat's models folder and is listed "
                              "in the library; the model itself is not changed."),
                           this);
  intro->setWordWrap(true);
  v->addWidget(intro);
  auto* form = new QFormLayout;
  auto* sourceLabel = new QLabel(QFileInfo(source).fileName(), this);
  sourceLabel->setToolTip(source);
  form->addRow(tr("Model"), sourceLabel);
  m_type = new QComboBox(this);
  m_type->setObjectName(QStringLiteral("quantizeType"));
  for (const auto& [name, description] : ModelQuantization::fileTypes()) m_type->addItem(name + " — " + description, name);
  m_type->setCurrentIndex(m_type->findData(QStringLiteral("Q4_K_M")));
  m_type->setToolTip(tr("Bits per weight as on a 7B model: a small model's embedding, kept at 6-8 bits, is a larger "
                        "share of its file, so its copy is larger than that"));
  form->addRow(tr("Type"), m_type);
  auto* calibrationRow = new QHBoxLayout;
  m_calibration = new QLineEdit(this);
  m_calibration->setObjectName(QStringLiteral("quantizeCalibration"));
  m_calibration->setPlaceholderText(tr("Optional: a text the model should read well (better at 4 bits and below)"));
  m_calibration->setToolTip(tr("A plain text file (notes, a chapter, some chats): the model reads it first, and the "
                               "weights that meet large activations on it are kept more exactly. About a minute "
                               "for a small model."));
  m_browse = new QPushButton(tr("Choose…"), this);
  auto* browse = m_browse;
  calibrationRow->addWidget(m_calibration, 1);
  calibrationRow->addWidget(browse);
  form->addRow(tr("Calibration text"), calibrationRow);
  m_gptq = new QCheckBox(tr("Also correct the rounding errors (GPTQ-style; a few times slower)"), this);
  m_gptq->setObjectName(QStringLiteral("quantizeGptq"));
  m_gptq->setToolTip(tr("Each block of weights is rounded in turn and its error moved onto the weights not yet rounded, "
                        "where the activations measured on the calibration text can cancel it. Best at 3 bits and below. "
                        "Needs a calibration text."));
  form->addRow(QString(), m_gptq);
  m_output = new QLineEdit(this);
  m_output->setObjectName(QStringLiteral("quantizeOutput"));
  m_output->setToolTip(tr("A new file; an existing one is never replaced"));
  form->addRow(tr("Save as"), m_output);
  v->addLayout(form);
  m_warning = new QLabel(ModelQuantization::requantizeWarning(source), this);
  m_warning->setObjectName(QStringLiteral("quantizeWarning"));
  m_warning->setWordWrap(true);
  m_warning->setVisible(!m_warning->text().isEmpty());
  v->addWidget(m_warning);
  m_requantize = new QCheckBox(tr("Quantize it anyway"), this);
  m_requantize->setObjectName(QStringLiteral("quantizeAnyway"));
  m_requantize->setVisible(!m_warning->text().isEmpty());  // (isVisible() is false until the dialog is shown)
  v->addWidget(m_requantize);
  m_progress = new QProgressBar(this);
  m_progress->setObjectName(QStringLiteral("quantizeProgress"));
  m_progress->setRange(0, 1000);
  m_progress->setVisible(false);  // until a run starts: an empty bar says nothing
  v->addWidget(m_progress);
  m_message = new QLabel(this);
  m_message->setObjectName(QStringLiteral("quantizeMessage"));
  m_message->setWordWrap(true);
  m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_message);
  v->addStretch(1);
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
    // The default name, or the first free one after it: a second run must not stop on a name.
    const QString base = ModelQuantization::defaultOutput(m_source, m_type->currentData().toString(), m_modelsDir);
    QString path = base;
    for (int n = 2; QFileInfo::exists(path); ++n) path = base.chopped(5) + QStringLiteral("-%1.gguf").arg(n);
    m_output->setText(path);
  };
  refreshOutput();
  connect(m_type, &QComboBox::currentIndexChanged, this, refreshOutput);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("A calibration text"), QString(), tr("Text (*.txt *.md);;All files (*)"));
    if (!path.isEmpty()) m_calibration->setText(path);
  });
  connect(m_requantize, &QCheckBox::toggled, this, &QuantizeDialog::updateButtons);
  connect(m_start, &QPushButton::clicked, this, &QuantizeDialog::start);
  connect(m_cancel, &QPushButton::clicked, this, [this] {
    m_job->cancel();
    m_cancel->setEnabled(false);
    say(tr("Cancelling… (the step under way finishes first)"));
  });
  connect(m_close, &QPushButton::clicked, this, &QDialog::close);
  connect(m_job, &ModelQuantization::progress, this, [this](const QString& stage, double fraction) {
    m_progress->setValue(static_cast<int>(fraction * 1000));
    say(stage);
  });
  connect(m_job, &ModelQuantization::finished, this, [this, refreshOutput](const QString& path, const QString& summary) {
    m_progress->setValue(1000);
    say(tr("Done. %1\nSaved as %2; it is listed in the library.").arg(summary, path));
    refreshOutput();
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
  r.gptq = m_gptq->isChecked();
  if (r.output.isEmpty()) return say(tr("Say where to save it."), true);
  if (QFileInfo(r.output).absoluteFilePath() == QFileInfo(m_source).absoluteFilePath())
    return say(tr("That would replace the model itself; choose another name."), true);
  if (QFileInfo::exists(r.output)) return say(tr("%1 exists already; choose another name.").arg(r.output), true);
  if (r.gptq && r.calibrationText.isEmpty())
    return say(tr("The GPTQ-style correction needs a calibration text: the activations it measures say where an error "
                  "can be cancelled."), true);
  if (r.type == QLatin1String("Q2_K_S") && r.calibrationText.isEmpty())
    return say(tr("Q2_K_S needs a calibration text: without one its 2-bit weights are unusable."), true);
  m_progress->setValue(0);
  m_progress->setVisible(true);
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
  m_gptq->setEnabled(!running);
  m_browse->setEnabled(!running);
}

// Closing while a run goes on asks first: the run stops, and nothing is written.
void QuantizeDialog::closeEvent(QCloseEvent* event) {
  if (m_job->isRunning() &&
      QMessageBox::question(this, tr("Stop quantizing?"), tr("The model is being quantized. Stop, and write nothing?")) !=
          QMessageBox::Yes) {
    event->ignore();
    return;
  }
  m_job->cancel();
  QDialog::closeEvent(event);
}

void QuantizeDialog::say(const QString& text, bool error) {
  m_message->setText(text);
  m_message->setStyleSheet(error ? QStringLiteral("color: %1;").arg(textColors().error.name()) : QString());
}
