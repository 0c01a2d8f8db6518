// The engine side of the bridge: model loading, and each reply as an engine request stepped
// on this thread, the chat's sequence parked between turns.
#include "ui/engine_worker.h"

#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_continuation.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"

struct EngineWorker::Loaded {
  std::unique_ptr<pagedchat::Model> model;
  std::unique_ptr<pagedchat::CpuBackend> backend;
  std::unique_ptr<pagedchat::Engine> engine;
  // Declared after the engine whose sink points at it, so it is destroyed first.
  std::unique_ptr<pagedchat::RequestRunner> runner;
};

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {}
EngineWorker::~EngineWorker() = default;

pagedchat::EngineStats EngineWorker::engineStats() const {
  return m_loaded ? m_loaded->engine->stats() : pagedchat::EngineStats{};
}

void EngineWorker::loadModel(const QString& path, int threads) {
  try {
    // Built aside and swapped in only when everything loaded: a bad file leaves the model
    // that was working in place.
    auto loaded = std::make_unique<Loaded>();
    loaded->model = pagedchat::Model::load(path.toStdString());
    loaded->backend = std::make_unique<pagedchat::CpuBackend>(loaded->model->weights, std::clamp(threads, 0, 1024));
    pagedchat::EngineConfig config;
    config.max_context = std::min(loaded->model->config().context_length, kMaxContext);
    loaded->engine = std::make_unique<pagedchat::Engine>(*loaded->model, *loaded->backend, config);
    loaded->runner = std::make_unique<pagedchat::RequestRunner>(*loaded->engine);
    m_loaded = std::move(loaded);
    m_chatSeq = -1;  // it lived in the engine just replaced
    m_chatMessages.clear();
    m_chatTokens.clear();
    const auto& c = m_loaded->model->config();
    emit modelLoaded(QStringLiteral("%1 · %2 layers · %3 threads · CPU")
                         .arg(QString::fromStdString(c.name))
                         .arg(c.num_layers)
                         .arg(m_loaded->backend->num_threads()));
  } catch (const std::exception& e) {
    emit modelFailed(QString::fromUtf8(e.what()));
  }
}

void EngineWorker::forgetChat() {
  if (m_chatSeq >= 0 && m_loaded) m_loaded->engine->release(m_chatSeq);
  m_chatSeq = -1;
  m_chatMessages.clear();
  m_chatTokens.clear();
}

std::vector<int32_t> EngineWorker::turnPrompt(const std::vector<pagedchat::ChatMessage>& chat,
                                              pagedchat::SequenceId& continueSeq) {
  const pagedchat::Model& model = *m_loaded->model;
  const pagedchat::KvManager& kv = m_loaded->engine->kv();
  continueSeq = -1;
  if (m_chatSeq >= 0 && kv.has_sequence(m_chatSeq) && kv.state(m_chatSeq) == pagedchat::SequenceState::parked) {
    // What the engine stores, then the last sampled token when it was not computed (a reply
    // ended by its length), then the text that closes the reply and opens the new turn.
    const size_t stored = static_cast<size_t>(kv.num_tokens(m_chatSeq));
    auto text = pagedchat::chat_continuation(model.chat_template, m_chatMessages, chat);
    if (text && stored <= m_chatTokens.size() && m_chatTokens.size() - stored <= 1) {
      std::vector<int32_t> prompt(m_chatTokens.begin() + static_cast<std::ptrdiff_t>(stored), m_chatTokens.end());
      std::vector<int32_t> added = model.tokenizer->encode(*text, false, true);
      prompt.insert(prompt.end(), added.begin(), added.end());
      continueSeq = m_chatSeq;
      return prompt;
    }
  }
  forgetChat();  // reclaimed under memory pressure, or a chat that does not extend it
  return model.encode_chat(chat);
}

void EngineWorker::generate(const QVector<QPair<QString, QString>>& messages, double temperature, int maxTokens) {
  if (!m_loaded) {
    emit replyFailed(tr("No model is loaded."));
    return;
  }
  m_stop.store(false);
  try {
    std::vector<pagedchat::ChatMessage> chat;
    for (const auto& m : messages) chat.push_back({m.first.toStdString(), m.second.toStdString()});
    pagedchat::Request request;
    request.prompt = turnPrompt(chat, request.continue_seq);
    request.params.temperature = static_cast<float>(temperature);
    request.params.max_tokens = maxTokens;
    request.params.seed = (static_cast<uint64_t>(m_seeds()) << 32) | m_seeds();
    request.park_when_done = true;
    std::vector<int32_t> tokens = request.continue_seq >= 0 ? m_chatTokens : std::vector<int32_t>{};
    if (request.continue_seq >= 0) tokens.resize(static_cast<size_t>(m_loaded->engine->kv().num_tokens(request.continue_seq)));
    tokens.insert(tokens.end(), request.prompt.begin(), request.prompt.end());

    pagedchat::RequestRun r = m_loaded->runner->run(
        std::move(request),
        [this](std::string_view text) {
          emit replyText(QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())));
        },
        [this] { return m_stop.load(); });

    if (r.parked) {
      // Kept for the next turn: the chat now holds this reply too.
      tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
      m_chatSeq = r.seq;
      m_chatTokens = std::move(tokens);
      m_chatMessages = chat;
      m_chatMessages.push_back({"assistant", r.text});
    } else {
      // Stopped or failed: the engine freed the sequence (or, for a refused continuation,
      // still holds it parked); either way the next turn starts from the whole chat.
      forgetChat();
    }
    if (!r.ok()) {
      emit replyFailed(QString::fromStdString(r.error));
      return;
    }
    double decode = r.tokens.size() > 1 ? (r.tokens.size() - 1) / std::max(r.decode_seconds, 1e-9) : 0.0;
    emit replyFinished(QStringLiteral("%1 prompt tokens · %2 tokens · %3 tok/s · first token after %4 ms")
                           .arg(r.num_prompt_tokens)
                           .arg(r.tokens.size())
                           .arg(decode, 0, 'f', 1)
                           .arg(r.prompt_seconds * 1000.0, 0, 'f', 0));
  } catch (const std::exception& e) {
    emit replyFailed(QString::fromUtf8(e.what()));
  }
}
