#pragma once
// The bridge between the widgets and the engine: lives on its own QThread, which is the
// engine thread: it loads the model, submits each reply as a request to pagedchat::Engine and
// steps the engine there, and reports back with queued signals only. The UI thread never
// waits on it. Stop is an atomic flag that the stepping loop turns into Engine::abort. The
// chat's sequence stays parked in the engine between turns, so a turn computes only the
// tokens it adds to the chat.

#include <QObject>
#include <QString>
#include <QVector>

#include <atomic>
#include <memory>
#include <random>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/kv/kv_types.h"

namespace pagedchat {
struct EngineStats;
}  // namespace pagedchat

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  explicit EngineWorker(QObject* parent = nullptr);
  ~EngineWorker() override;

  // Safe from any thread: the reply in progress is aborted before the engine's next step.
  void requestStop() { m_stop.store(true); }

  // Engine thread only, read-only: the engine's counters (how many prompt tokens the turns
  // computed, how many sequences are parked). All zero before a model is loaded.
  pagedchat::EngineStats engineStats() const;

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
  struct Loaded;  // model, backend, engine, runner: replaced together

  // The request of this turn: the parked chat continued when the new messages extend it,
  // otherwise the whole chat as a new sequence.
  std::vector<int32_t> turnPrompt(const std::vector<pagedchat::ChatMessage>& chat, pagedchat::SequenceId& continueSeq);
  void forgetChat();  // releases the parked sequence, if any

  std::unique_ptr<Loaded> m_loaded;
  std::atomic<bool> m_stop{false};
  std::random_device m_seeds;  // each reply samples differently

  // The chat's parked sequence (-1: none), the messages it holds (the last one the reply as
  // it was generated) and its tokens (the last sampled one included, which the engine stores
  // only when the next turn appends it).
  pagedchat::SequenceId m_chatSeq = -1;
  std::vector<pagedchat::ChatMessage> m_chatMessages;
  std::vector<int32_t> m_chatTokens;

  // The KV pool is sized for one chat of this many tokens (memory: ~190 MB for SmolLM2-135M);
  // a longer chat gets a clear error.
  static constexpr int kMaxContext = 4096;
};
