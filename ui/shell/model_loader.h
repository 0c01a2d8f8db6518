#pragma once
// Opening a model in the app: a file dialog (the model in use, else the default model,
// preselected), a recent-models list, and the load itself on the engine thread with a
// progress bar and a Cancel button (for the status bar: a modal dialog would steal the
// window's activation and run nested event loops from its setValue). A file that fails to load is shown in an error box that
// names the problem; the model in use stays. The flow is one QCoro coroutine (run()).

#include <QObject>
#include <QString>
#include <QStringList>

#include <qcoro/qcorotask.h>

#include "appcore/bridge/engine_bridge.h"

class ChatDatabase;
class QLabel;
class QProgressBar;
class QWidget;

class ModelLoader : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxRecent = 8;

  // bridge lives on the engine thread; db and window outlive the loader.
  ModelLoader(EngineBridge* bridge, ChatDatabase& db, QWidget* window);

  // Starts loading (returns at once); ignored while another load runs.
  void load(const QString& path, const EngineBridge::Config& config);
  // The file dialog, then load() on the file chosen.
  void chooseAndLoad(const EngineBridge::Config& config, const QString& defaultPath);
  bool isLoading() const { return m_loading; }
  QWidget* progressWidget() const { return m_progress; }  // hidden unless loading
  QString currentPath() const { return m_currentPath; }  // the model in use; empty before one
  QStringList recentModels() const;                      // most recent first
  // Whether a failed load opens an error box (the default). The window turns it off while no
  // model is in use: the welcome page says it instead, with nothing over an empty window.
  void setErrorBoxes(bool on) { m_errorBoxes = on; }

 signals:
  // ok: the model is in use (message: its description). Otherwise message is the error, or
  // empty when the user cancelled.
  void ended(bool ok, const QString& message);
  void recentModelsChanged();
  void loadingChanged(bool loading);
  void modelInUse(const QString& path);  // after ended(true, ...): currentPath() is path

 private:
  QCoro::Task<> run(QString path, EngineBridge::Config config);
  void remember(const QString& path);

  EngineBridge* m_bridge;
  ChatDatabase& m_db;
  QWidget* m_window;
  QWidget* m_progress;
  QLabel* m_progressLabel;
  QProgressBar* m_progressBar;
  bool m_loading = false;
  bool m_errorBoxes = true;
  QString m_currentPath;
};
