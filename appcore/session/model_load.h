#pragma once
// Loading a model into the app's engine: the load on the engine thread, its stages and
// outcome, the model in use and the recent models (saved in the chat database). One load at a
// time; the new model, backend and engine are built aside, so a cancel or a bad file leaves
// the model in use running. What shows it (the status bar's progress and Cancel, an error box,
// the welcome page's sentence) is the window's (ui/shell/model_loader.h); a lesson's fresh
// engine goes through here too, and the window shows its progress all the same.

#include <QObject>
#include <QString>
#include <QStringList>

#include "appcore/bridge/engine_bridge.h"

class ChatDatabase;

class ModelLoad : public QObject {
  Q_OBJECT
 public:
  static constexpr int kMaxRecent = 8;

  // bridge lives on the engine thread; db outlives this object.
  ModelLoad(EngineBridge* bridge, ChatDatabase& db, QObject* parent = nullptr);

  // Starts loading (returns at once); false, and nothing starts, while another load runs.
  bool load(const QString& path, const EngineBridge::Config& config);
  void cancel();  // the engine thread stops at its next progress report (ended(false, ""))
  bool isLoading() const { return m_loading; }
  QString currentPath() const { return m_currentPath; }  // the model in use; empty before one
  QStringList recentModels() const;                      // most recent first
  // The model the app opens at its start when none is asked for: the one used last (as LM
  // Studio and Jan reopen it), else `fallback` (the default model) when that file is there.
  // A model used last whose file is gone is named in *gone, and nothing is opened.
  QString modelAtStart(const QString& fallback, QString* gone = nullptr) const;

 signals:
  void started(const QString& path);
  void progress(const QString& stage, int permille);  // one bar for the whole load
  // ok: the model is in use (message: its description). Otherwise message is the error, or
  // empty when the load was cancelled.
  void ended(bool ok, const QString& message, const QString& path);
  void modelInUse(const QString& path);  // after ended(true, ...): currentPath() is path
  void loadingChanged(bool loading);
  void recentModelsChanged();
  // The bridge's outcome, re-emitted on this object's (the UI) thread, where finish() takes it.
  void bridgeSaid(bool ok, const QString& message);

 private:
  void finish(bool ok, const QString& message, const QString& path);
  void remember(const QString& path);

  EngineBridge* m_bridge;
  ChatDatabase& m_db;
  bool m_loading = false;
  QString m_currentPath;
};
