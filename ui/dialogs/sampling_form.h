#pragma once
// The sampling settings as a form (temperature, top-p, top-k, min-p, the three penalties, max
// tokens, seed, and how replies are written: free text, JSON, a JSON schema's documents): the settings dialog shows it for the app's defaults, the chat's sampling dialog
// for one chat's own. Only the fields takeSampling copies (appcore/chat/chat_types.h) are read or set.

#include <QWidget>

#include "appcore/chat/chat_types.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QSpinBox;

class SamplingForm : public QWidget {
  Q_OBJECT
 public:
  explicit SamplingForm(const TurnSettings& shown, QWidget* parent = nullptr);
  void setSampling(const TurnSettings& s);
  // `base` with the form's values in place of its sampling fields.
  TurnSettings sampling(TurnSettings base = {}) const;
  // What is wrong with the answer format (a schema that is not JSON, or outside the subset the
  // engine enforces); empty when the form's settings can be used.
  QString problem() const;

 signals:
  void edited();

 private:
  QDoubleSpinBox *m_temperature, *m_topP, *m_minP, *m_repetition, *m_frequency, *m_presence;
  QSpinBox *m_topK, *m_maxTokens, *m_seed;
  // Answer: free text, any JSON object, or a JSON schema (typed below it), its problem said under it.
  QComboBox* m_answer;
  QPlainTextEdit* m_schema;
  QLabel* m_schemaProblem;
  QString answerFormat() const;
  void showSchemaProblem();
};

// One line for the settings, as the chat shows them: "temperature 0.7 · top-p 0.95 · ...".
QString describeChatSampling(const TurnSettings& s);
