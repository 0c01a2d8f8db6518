#pragma once
// The bridge between the widgets and the engine: lives on its own QThread, loads the model
// and generates replies there, and reports back with queued signals only. The UI thread never
// waits on it; stopping a reply is an atomic flag checked between tokens.

#include <QObject>
#include <QString>
#include <QVector>

#include <atomic>
#include <memory>
#include <random>

namespace pagedchat {
struct Model;
class CpuBackend;
class Generator;
}  // namespace pagedchat

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  explicit EngineWorker(QObject* parent = nullptr);
  ~EngineWorker() override;

  // Safe from any thread: asks the reply in progress to stop after its current token.
  void requestStop() { m_stop.store(true); }

 public slots:
  void loadModel(const QString& path, int threads);
  // messages: alternating roles as (role, content) pairs, the last one the user's.
  void generate(const QVector<QPair<QString, QString>>& messages, double temperature, int maxTokens);

 signals:
  void modelLoaded(const QString& description);
  void modelFailed(const QString& error);
  void replyText(const QString& text);
  void replyFinished(const QString& stats);
  void replyFailed(const QString& error);

 private:
  std::unique_ptr<pagedchat::Model> m_model;
  std::unique_ptr<pagedchat::CpuBackend> m_backend;
  std::unique_ptr<pagedchat::Generator> m_generator;
  std::atomic<bool> m_stop{false};
  std::random_device m_seeds;  // each reply samples differently
  // A chat is re-read whole each turn by this first window: its context is capped so a turn
  // stays quick on the CPU (the engine issue keeps chats resident instead).
  static constexpr int kMaxContext = 4096;
};
