#pragma once
// Opening a model in the window: a file dialog (the model in use, else the default model,
// preselected), and the session's load (appcore/session/model_load.h) shown as a progress bar
// with a Cancel button (for the status bar: a modal dialog would steal the window's activation
// and run nested event loops from its setValue). A file that fails to load is shown in an
// error box that names the problem; the model in use stays.

#include <QObject>
#include <QString>
#include <QStringList>

#include "appcore/session/model_load.h"

class QLabel;
class QProgressBar;
class QWidget;

class ModelLoader : public QObject {
  Q_OBJECT
 public:
  // load and window outlive the loader.
  ModelLoader(ModelLoad& load, QWidget* window);

  // Starts loading (returns at once); ignored while another load runs.
  void load(const QString& path, const EngineBridge::Config& config) { m_load.load(path, config); }
  // The file dialog, then load() on the file chosen.
  void chooseAndLoad(const EngineBridge::Config& config, const QString& defaultPath);
  bool isLoading() const { return m_load.isLoading(); }
  QWidget* progressWidget() const { return m_progress; }  // hidden unless loading
  QString currentPath() const { return m_load.currentPath(); }  // the model in use; empty before one
  QStringList recentModels() const { return m_load.recentModels(); }  // most recent first
  // Whether a failed load opens an error box (the default). The window turns it off while no
  // model is in use: the welcome page says it instead, with nothing over an empty window.
  void setErrorBoxes(bool on) { m_errorBoxes = on; }

 signals:
  // As ModelLoad's: ok, the model is in use (message: its description); otherwise message is
  // the error, or empty when the user cancelled.
  void ended(bool ok, const QString& message);
  void recentModelsChanged();
  void loadingChanged(bool loading);
  void modelInUse(const QString& path);  // after ended(true, ...): currentPath() is path

 private:
  void showError(const QString& path, const QString& message);

  ModelLoad& m_load;
  QWidget* m_window;
  QWidget* m_progress;
  QLabel* m_progressLabel;
  QProgressBar* m_progressBar;
  bool m_errorBoxes = true;
};
