#pragma once
// The sampling settings as a form (temperature, top-p, top-k, min-p, the three penalties, max
// tokens, seed): the settings dialog shows it for the app's defaults, the chat's sampling dialog
// for one chat's own. Only the fields takeSampling copies (appcore/chat/chat_types.h) are read or set.

#include <QWidget>

#include "appcore/chat/chat_types.h"

class QDoubleSpinBox;
class QSpinBox;

class SamplingForm : public QWidget {
  Q_OBJECT
 public:
  explicit SamplingForm(const TurnSettings& shown, QWidget* parent = nullptr);
  void setSampling(const TurnSettings& s);
  // `base` with the form's values in place of its sampling fields.
  TurnSettings sampling(TurnSettings base = {}) const;

 signals:
  void edited();

 private:
  QDoubleSpinBox *m_temperature, *m_topP, *m_minP, *m_repetition, *m_frequency, *m_presence;
  QSpinBox *m_topK, *m_maxTokens, *m_seed;
};

// One line for the settings, as the chat shows them: "temperature 0.7 · top-p 0.95 · ...".
QString describeChatSampling(const TurnSettings& s);
