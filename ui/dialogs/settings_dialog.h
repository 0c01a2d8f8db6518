#pragma once
// The settings dialog: sampling defaults for new replies, and the engine's shape (KV block
// size, KV pool memory, tokens per step, threads, context per chat, backend). Engine changes
// take effect by reloading the model, which the dialog says before the user accepts.

#include <QDialog>

#include "appcore/session/app_settings.h"

class QCheckBox;
class QComboBox;
class SamplingForm;
class QLabel;
class QLineEdit;
class QSpinBox;

class SettingsDialog : public QDialog {
  Q_OBJECT
 public:
  // cudaAvailable: the CUDA backend is built and a GPU is there (else the choice is disabled).
  SettingsDialog(const AppSettings& current, bool cudaAvailable, QWidget* parent = nullptr);
  AppSettings settings() const;

 private:
  void updateNote();

  AppSettings m_initial;
  SamplingForm* m_sampling;
  QComboBox *m_blockSize, *m_backend, *m_kvType, *m_speculation, *m_chatTemplate;
  QLineEdit* m_draftModel;
  QComboBox* m_contextPolicy = nullptr;  // the app's default ContextPolicy
  QSpinBox *m_kvMemory, *m_swapMemory, *m_maxBatched, *m_threads, *m_maxContext;
  QCheckBox* m_kvDisk;
  QSpinBox* m_kvDiskSize;
  QLabel* m_note;
};
