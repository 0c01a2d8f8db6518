// The sampling form's fields, with the ranges the settings accept when loaded (app_settings.cpp,
// chat_json.cpp's samplingFromJson).
#include "ui/dialogs/sampling_form.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLayout>
#include <QPlainTextEdit>
#include <QSpinBox>

#include "appcore/chat/answer_format.h"

#include <algorithm>

#include "ui/dialogs/spin_boxes.h"

SamplingForm::SamplingForm(const TurnSettings& shown, QWidget* parent) : QWidget(parent) {
  auto* f = new QFormLayout(this);
  f->setContentsMargins(0, 0, 0, 0);
  m_temperature = settingsDoubleBox(this, "temperature", 0, 5, 0.05);
  m_topP = settingsDoubleBox(this, "topP", 0, 1, 0.05);
  m_topK = settingsIntBox(this, "topK", 0, 1000, tr("off"));
  m_minP = settingsDoubleBox(this, "minP", 0, 1, 0.01);
  m_repetition = settingsDoubleBox(this, "repetitionPenalty", 0.5, 3, 0.05);
  m_frequency = settingsDoubleBox(this, "frequencyPenalty", -2, 2, 0.1);
  m_presence = settingsDoubleBox(this, "presencePenalty", -2, 2, 0.1);
  m_maxTokens = settingsIntBox(this, "maxTokens", 1, 32768);
  m_seed = settingsIntBox(this, "seed", 0, 2147483647, tr("random"));
  f->addRow(tr("Temperature (0: greedy)"), m_temperature);
  f->addRow(tr("Top-p (1: off)"), m_topP);
  f->addRow(tr("Top-k"), m_topK);
  f->addRow(tr("Min-p (0: off)"), m_minP);
  f->addRow(tr("Repetition penalty (1: off)"), m_repetition);
  f->addRow(tr("Frequency penalty (0: off)"), m_frequency);
  f->addRow(tr("Presence penalty (0: off)"), m_presence);
  f->addRow(tr("Max tokens per reply"), m_maxTokens);
  f->addRow(tr("Seed"), m_seed);
  m_frequency->setToolTip(tr("Subtracted from a token's logit once per time it occurred in the last 64 tokens"));
  m_presence->setToolTip(tr("Subtracted once from the logit of any token that occurred in the last 64 tokens"));
  m_seed->setToolTip(tr("The same seed and settings give the same reply; random: a new seed each turn"));
  m_answer = new QComboBox(this);
  m_answer->setObjectName(QStringLiteral("answerFormat"));
  m_answer->addItems({tr("Free text"), tr("JSON (any object)"), tr("JSON matching a schema")});
  m_answer->setToolTip(tr("JSON replies are held to it token by token: they always parse, and match the schema"));
  m_schema = new QPlainTextEdit(this);
  m_schema->setObjectName(QStringLiteral("answerSchema"));
  m_schema->setPlaceholderText(QStringLiteral(R"({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]})"));
  // Room for a small schema (five lines) without scrolling; larger ones scroll.
  m_schema->setMinimumHeight(m_schema->fontMetrics().lineSpacing() * 5 + 12);
  m_schema->setMaximumHeight(m_schema->fontMetrics().lineSpacing() * 9 + 12);
  m_schemaProblem = new QLabel(this);
  m_schemaProblem->setObjectName(QStringLiteral("answerSchemaProblem"));
  m_schemaProblem->setWordWrap(true);
  m_schemaProblem->setStyleSheet(QStringLiteral("color: #c0392b"));
  f->addRow(tr("Answer in"), m_answer);
  f->addRow(QString(), m_schema);
  f->addRow(QString(), m_schemaProblem);
  setSampling(shown);
  connect(m_answer, &QComboBox::currentIndexChanged, this, [this] {
    showSchemaProblem();
    emit edited();
  });
  connect(m_schema, &QPlainTextEdit::textChanged, this, [this] {
    showSchemaProblem();
    emit edited();
  });
  for (QDoubleSpinBox* b : {m_temperature, m_topP, m_minP, m_repetition, m_frequency, m_presence})
    connect(b, &QDoubleSpinBox::valueChanged, this, &SamplingForm::edited);
  for (QSpinBox* b : {m_topK, m_maxTokens, m_seed}) connect(b, &QSpinBox::valueChanged, this, &SamplingForm::edited);
}

void SamplingForm::setSampling(const TurnSettings& s) {
  m_temperature->setValue(s.temperature);
  m_topP->setValue(s.topP);
  m_topK->setValue(s.topK);
  m_minP->setValue(s.minP);
  m_repetition->setValue(s.repetitionPenalty);
  m_frequency->setValue(s.frequencyPenalty);
  m_presence->setValue(s.presencePenalty);
  m_maxTokens->setValue(s.maxTokens);
  m_seed->setValue(static_cast<int>(std::min<quint64>(s.seed, 2147483647)));
  const QSignalBlocker blockAnswer(m_answer), blockSchema(m_schema);
  m_answer->setCurrentIndex(s.answerFormat.isEmpty() ? 0 : s.answerFormat == kAnswerJsonObject ? 1 : 2);
  m_schema->setPlainText(s.answerFormat.isEmpty() || s.answerFormat == kAnswerJsonObject ? QString() : s.answerFormat);
  showSchemaProblem();
}

QString SamplingForm::answerFormat() const {
  switch (m_answer->currentIndex()) {
    case 1: return kAnswerJsonObject;
    case 2: return m_schema->toPlainText().trimmed();
    default: return {};
  }
}

QString SamplingForm::problem() const {
  if (m_answer->currentIndex() == 2 && m_schema->toPlainText().trimmed().isEmpty()) return tr("Type the JSON schema replies must match.");
  return answerFormatProblem(answerFormat());
}

void SamplingForm::showSchemaProblem() {
  const bool schema = m_answer->currentIndex() == 2;
  m_schema->setVisible(schema);
  const QString why = problem();
  m_schemaProblem->setText(why);
  m_schemaProblem->setVisible(!why.isEmpty());
  // The dialog grows to show the schema box and the whole problem (it was cut at two lines).
  if (QWidget* dialog = window(); dialog != this && dialog->isVisible()) {
    dialog->layout()->activate();
    dialog->resize(dialog->width(), std::max(dialog->height(), dialog->sizeHint().height()));
  }
}

TurnSettings SamplingForm::sampling(TurnSettings base) const {
  base.temperature = m_temperature->value();
  base.topP = m_topP->value();
  base.topK = m_topK->value();
  base.minP = m_minP->value();
  base.repetitionPenalty = m_repetition->value();
  base.frequencyPenalty = m_frequency->value();
  base.presencePenalty = m_presence->value();
  base.maxTokens = m_maxTokens->value();
  base.seed = static_cast<quint64>(m_seed->value());
  base.answerFormat = answerFormat();
  return base;
}

QString describeChatSampling(const TurnSettings& s) {
  QStringList parts;
  parts << (s.temperature == 0 ? SamplingForm::tr("greedy") : SamplingForm::tr("temperature %1").arg(s.temperature));
  if (s.temperature != 0) {
    if (s.topP < 1) parts << SamplingForm::tr("top-p %1").arg(s.topP);
    if (s.topK > 0) parts << SamplingForm::tr("top-k %1").arg(s.topK);
    if (s.minP > 0) parts << SamplingForm::tr("min-p %1").arg(s.minP);
  }
  if (s.repetitionPenalty != 1) parts << SamplingForm::tr("repetition %1").arg(s.repetitionPenalty);
  if (s.frequencyPenalty != 0) parts << SamplingForm::tr("frequency %1").arg(s.frequencyPenalty);
  if (s.presencePenalty != 0) parts << SamplingForm::tr("presence %1").arg(s.presencePenalty);
  parts << SamplingForm::tr("up to %1 tokens").arg(s.maxTokens);
  if (s.seed != 0) parts << SamplingForm::tr("seed %1").arg(s.seed);
  if (!s.answerFormat.isEmpty()) parts << SamplingForm::tr("answers in %1").arg(describeAnswerFormat(s.answerFormat));
  return parts.join(QStringLiteral(" · "));
}
