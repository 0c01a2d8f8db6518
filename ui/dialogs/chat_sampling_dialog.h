#pragma once
// One chat's sampling settings: the app's defaults (Settings), or its own, which its next
// replies use (and its forks inherit). Opened from the chat (the "Sampling" button under the
// input, Chat > Sampling settings).

#include <QDialog>

#include <optional>

#include "appcore/chat/chat_types.h"

class QRadioButton;
class SamplingForm;

class ChatSamplingDialog : public QDialog {
  Q_OBJECT
 public:
  ChatSamplingDialog(const QString& chatTitle, const std::optional<TurnSettings>& own, const TurnSettings& appDefaults,
                     QWidget* parent = nullptr);
  std::optional<TurnSettings> ownSampling() const;  // nullopt: the app's defaults

 private:
  QRadioButton *m_useApp, *m_useOwn;
  SamplingForm* m_form;
};
