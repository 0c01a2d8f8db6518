#include "appcore/remote/remote_bridge.h"

#include <QMetaObject>
#include <QRandomGenerator>

#include "engine/chat/tool_calls.h"

#include "remote/openai_client.h"

using namespace pagedchat;

namespace {
remote::RemoteChatRequest requestOf(const RemoteEngineChoice& engine, const ChatMessages& messages, const TurnSettings& s, int n) {
  remote::RemoteChatRequest r;
  r.model = engine.model.toStdString();
  for (const EngineMessage& m : messages) {
    remote::RemoteMessage message{m.role.toStdString(), m.content.toStdString()};
    for (const ToolCallRecord& c : m.toolCalls) message.tool_calls.push_back({c.id.toStdString(), c.name.toStdString(), c.arguments.toStdString()});
    message.tool_call_id = m.toolCallId.toStdString();
    r.messages.push_back(std::move(message));
  }
  r.tools = s.toolsJson.toStdString();  // the calls come back as the server reads them; they run here
  r.tool_choice = s.toolChoice.toStdString();
  r.max_tokens = s.maxTokens;
  r.temperature = s.temperature;
  r.top_p = s.topP;
  if (s.seed != 0) r.seed = s.seed;
  r.frequency_penalty = s.frequencyPenalty;
  r.presence_penalty = s.presencePenalty;
  r.beam_search = s.beamSearch && n > 1;
  r.answer_format = s.answerFormat.toStdString();
  r.n = n;
  return r;
}

// A reply's calls as the chat keeps them; a server that gave a call no id gets one of ours.
QVector<ToolCallRecord> callsOf(const std::vector<remote::RemoteToolCall>& calls) {
  QVector<ToolCallRecord> out;
  for (const remote::RemoteToolCall& c : calls) {
    const std::string id = !c.id.empty() ? c.id : make_call_id(ToolFormat::kGeneric, [](uint32_t n) { return QRandomGenerator::global()->bounded(n); });
    out.append({QString::fromStdString(id), QString::fromStdString(c.name), QString::fromStdString(c.arguments.empty() ? "{}" : c.arguments)});
  }
  return out;
}

// The figures under a message: the server's own counts where it reports them, ours otherwise.
ReplyMetrics metricsOf(const remote::RemoteChatResult& r, size_t sample, bool onlySample) {
  ReplyMetrics m;
  const int64_t chunks = sample < r.chunks.size() ? r.chunks[sample] : 0;
  m.numTokens = static_cast<int>(onlySample && r.usage.completion_tokens >= 0 ? r.usage.completion_tokens : chunks);
  m.secondsToFirstToken = std::max(r.first_token_ms, 0.0) / 1000.0;
  const double streaming = (r.total_ms - std::max(r.first_token_ms, 0.0)) / 1000.0;
  m.tokensPerSecond = m.numTokens > 1 && streaming > 0 ? (m.numTokens - 1) / streaming : 0.0;
  m.numPromptTokens = std::max<int64_t>(r.usage.prompt_tokens, 0);
  m.numCachedPromptTokens = std::max<int64_t>(r.usage.cached_tokens, 0);
  const std::string finish = sample < r.finish_reasons.size() ? r.finish_reasons[sample] : std::string();
  m.finishReason = r.error.kind == remote::RemoteErrorKind::stopped ? QStringLiteral("abort")
                   : !finish.empty()                                  ? QString::fromStdString(finish)
                                                                      : QStringLiteral("error");
  return m;
}
}  // namespace

RemoteBridge::RemoteBridge(QObject* parent) : QObject(parent) {}

RemoteBridge::~RemoteBridge() {
  for (auto& [id, job] : m_jobs) job.stop->store(true);
  for (auto& [id, job] : m_jobs)
    for (std::thread& t : job.threads) t.join();
}

void RemoteBridge::submit(ChatId id, const RemoteEngineChoice& engine, const QString& apiKey, const ChatMessages& messages,
                          const TurnSettings& settings) {
  if (m_jobs.count(id)) {
    emit replyFailed(id, tr("This chat is still replying."), {});
    emit turnDone(id);
    return;
  }
  remote::Endpoint endpoint{engine.url.toStdString(), apiKey.toStdString()};
  // One request with n samples, or one per column of "Vary settings" (each its own settings).
  std::vector<remote::RemoteChatRequest> requests;
  if (settings.columns.empty()) {
    requests.push_back(requestOf(engine, messages, settings, std::max(settings.numSamples, 1)));
  } else {
    for (const TurnSettings& column : settings.columns) requests.push_back(requestOf(engine, messages, column, 1));
  }
  const bool samplesInOne = settings.columns.empty();
  Job& job = m_jobs[id];
  job.stop = std::make_shared<std::atomic<bool>>(false);
  job.running = static_cast<int>(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    job.threads.emplace_back([this, id, endpoint, request = std::move(requests[i]), column = static_cast<int>(i), samplesInOne,
                              stop = job.stop] {
      const remote::RemoteChatResult r = remote::stream_chat(endpoint, request, [&](const remote::RemoteDelta& d) {
        const int sample = samplesInOne ? d.index : column;
        QMetaObject::invokeMethod(this, [this, id, sample, text = QString::fromStdString(std::string(d.text))] {
          emit replyText(id, sample, text);
        }, Qt::QueuedConnection);
      }, stop.get(), [&](const std::string& response) {
        QMetaObject::invokeMethod(this, [this, id, url = QString::fromStdString(endpoint.base_url), response = QString::fromStdString(response)] {
          emit requestStarted(id, url, response);
        }, Qt::QueuedConnection);
      });
      QMetaObject::invokeMethod(this, [this, id, r, column, samplesInOne] {
        const size_t samples = samplesInOne ? std::max<size_t>(r.texts.size(), 1) : 1;
        for (size_t s = 0; s < samples; ++s) {
          const int sample = samplesInOne ? static_cast<int>(s) : column;
          const size_t choice = samplesInOne ? s : 0;
          if (choice < r.tool_calls.size() && !r.tool_calls[choice].empty())
            emit replyToolCalls(id, sample, QString::fromStdString(r.texts[choice]), callsOf(r.tool_calls[choice]));
          emit replyFinished(id, sample, metricsOf(r, choice, samples == 1));
        }
        auto it = m_jobs.find(id);
        if (it != m_jobs.end() && !r.error.ok() && r.error.kind != remote::RemoteErrorKind::stopped && it->second.failure.isEmpty()) {
          it->second.failure = QString::fromStdString(r.error.sentence());
          it->second.detail = QStringLiteral("%1 %2").arg(QString::fromStdString(r.error.url), QString::fromStdString(r.error.detail));
        }
        requestEnded(id);
      }, Qt::QueuedConnection);
    });
  }
}

void RemoteBridge::stop(ChatId id) {
  if (auto it = m_jobs.find(id); it != m_jobs.end()) it->second.stop->store(true);
}

void RemoteBridge::requestEnded(ChatId id) {
  auto it = m_jobs.find(id);
  if (it == m_jobs.end() || --it->second.running > 0) return;
  for (std::thread& t : it->second.threads) t.join();  // each has posted its last call: they are ending
  const QString failure = it->second.failure, detail = it->second.detail;
  m_jobs.erase(it);
  if (!failure.isEmpty()) emit replyFailed(id, failure, detail.trimmed());
  emit turnDone(id);
}
