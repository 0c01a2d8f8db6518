// The engine side of the bridge: model loading and reply generation on the engine thread.
#include "ui/engine_worker.h"

#include <algorithm>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/generate/generator.h"
#include "engine/model/model.h"

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {}
EngineWorker::~EngineWorker() = default;

void EngineWorker::loadModel(const QString& path, int threads) {
  try {
    // Built aside and swapped in only when everything loaded: a bad file leaves the model
    // that was working in place.
    auto model = pagedchat::Model::load(path.toStdString());
    auto backend = std::make_unique<pagedchat::CpuBackend>(model->weights, std::clamp(threads, 0, 1024));
    pagedchat::GeneratorConfig config;
    config.max_context = std::min(model->config().context_length, kMaxContext);
    auto generator = std::make_unique<pagedchat::Generator>(*model, *backend, config);
    m_generator = std::move(generator);
    m_backend = std::move(backend);
    m_model = std::move(model);
    const auto& c = m_model->config();
    emit modelLoaded(QStringLiteral("%1 · %2 layers · %3 threads · CPU")
                         .arg(QString::fromStdString(c.name))
                         .arg(c.num_layers)
                         .arg(m_backend->num_threads()));
  } catch (const std::exception& e) {
    emit modelFailed(QString::fromUtf8(e.what()));
  }
}

void EngineWorker::generate(const QVector<QPair<QString, QString>>& messages, double temperature, int maxTokens) {
  if (!m_generator) {
    emit replyFailed(tr("No model is loaded."));
    return;
  }
  m_stop.store(false);
  try {
    std::vector<pagedchat::ChatMessage> chat;
    for (const auto& m : messages) chat.push_back({m.first.toStdString(), m.second.toStdString()});
    std::vector<int32_t> tokens = m_model->encode_chat(chat);
    pagedchat::SamplingParams sp;
    sp.temperature = static_cast<float>(temperature);
    sp.max_tokens = maxTokens;
    sp.seed = (static_cast<uint64_t>(m_seeds()) << 32) | m_seeds();
    auto r = m_generator->generate(
        tokens, sp,
        [this](std::string_view text) {
          emit replyText(QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())));
          return true;
        },
        false, [this] { return m_stop.load(); });
    double decode = r.tokens.size() > 1 ? (r.tokens.size() - 1) / std::max(r.decode_seconds, 1e-9) : 0.0;
    emit replyFinished(QStringLiteral("%1 prompt tokens · %2 tokens · %3 tok/s · first token after %4 ms")
                           .arg(r.prompt_tokens)
                           .arg(r.tokens.size())
                           .arg(decode, 0, 'f', 1)
                           .arg(r.prompt_seconds * 1000.0, 0, 'f', 0));
  } catch (const std::exception& e) {
    emit replyFailed(QString::fromUtf8(e.what()));
  }
}
