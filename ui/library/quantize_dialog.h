#pragma once
// Quantize… in the model library: the selected model written in a smaller type (Q4_K_M, Q8_0,
// ...), optionally weighted by an importance matrix measured on a text the user picks (the
// weights that meet large activations are kept more exactly), with progress and Cancel. The
// work is appcore's ModelQuantization; this only asks and shows. On success it says where the
// new file is and emits quantized(path), which the library rescans for.

#include <QDialog>

class ModelQuantization;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

class QuantizeDialog : public QDialog {
  Q_OBJECT
 public:
  QuantizeDialog(const QString& source, const QString& modelsDir, QWidget* parent = nullptr);

  ModelQuantization* job() const { return m_job; }
  QString message() const;
  void setType(const QString& type);
  void setCalibrationText(const QString& path);
  QString outputPath() const;
  void start();  // what the Quantize button does

 signals:
  void quantized(const QString& path);

 private:
  void closeEvent(QCloseEvent* event) override;
  void say(const QString& text, bool error = false);
  void updateButtons();

  QString m_source, m_modelsDir;
  ModelQuantization* m_job;
  QComboBox* m_type;
  QLineEdit *m_output, *m_calibration;
  QCheckBox* m_requantize;
  QCheckBox* m_gptq;
  QLabel *m_warning, *m_message;
  QProgressBar* m_progress;
  QPushButton *m_start, *m_cancel, *m_close, *m_browse;
};
