#include "ui/engine_worker.h"

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/generate/generator.h"
#include "engine/model/model.h"

EngineWorker::EngineWorker(QObject* parent) : QObject(parent) {}
EngineWorker::~EngineWorker() = default;

void EngineWorker::loadModel(const QString& path, int threads) {
  try {
    m_generator.reset();
    m_backend.reset();
    m_model = pagedchat::Model::load(path.toStdString());
    m_backend = std::make_unique<pagedchat::CpuBackend>(m_model->weights, threads);
    pagedchat::GeneratorConfig config;
    config.max_context = std::min(m_model->config().context_length, 4096);
    m_generator = std::make_unique<pagedchat::Generator>(*m_model, *m_backend, config);
    const auto& c = m_model->config();
    emit modelLoaded(QStringLiteral("%1 · %2 layers · %3 threads · CPU")
                         .arg(QString::fromStdString(c.name))
                         .arg(c.num_layers)
                         .arg(m_backend->num_threads()));
  } catch (const std::exception& e) {
    m_model.reset();
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
    std::string prompt = m_model->chat_template.apply(chat, true);
    std::vector<int32_t> tokens = m_model->tokenizer->encode(prompt, false, true);
    pagedchat::SamplingParams sp;
    sp.temperature = static_cast<float>(temperature);
    sp.max_tokens = maxTokens;
    sp.seed = static_cast<uint64_t>(std::rand());
    auto r = m_generator->generate(tokens, sp, [this](std::string_view text) {
      emit replyText(QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())));
      return !m_stop.load();
    });
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
