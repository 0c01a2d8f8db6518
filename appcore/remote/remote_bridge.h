#pragma once
// Turns of chats that run on a remote engine (ChatRecord::remote): each request streamed by
// remote::stream_chat on a thread of its own, so chats on several servers (and the local
// engine) reply at once; what arrives is handed to the UI thread as the EngineBridge hands its
// own (replyText, replyFinished, replyToolCalls, turnDone), so ChatController treats both alike. Samples: one
// request with n; "Vary settings" columns: one request a column, in parallel. Stop closes the
// connections (the server aborts the request); a failure ends the turn with the client's
// sentence (remote/openai_client.h), the text that arrived kept.

#include <QObject>
#include <QString>

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "appcore/chat/chat_record.h"
#include "appcore/chat/chat_types.h"
#include "appcore/chat/reply_metrics.h"

class RemoteBridge : public QObject {
  Q_OBJECT
 public:
  explicit RemoteBridge(QObject* parent = nullptr);
  ~RemoteBridge() override;  // stops every request and waits for its thread

  void submit(ChatId id, const RemoteEngineChoice& engine, const QString& apiKey, const ChatMessages& messages,
              const TurnSettings& settings);
  void stop(ChatId id);
  bool isReplying(ChatId id) const { return m_jobs.count(id) > 0; }

 signals:
  void replyText(ChatId id, int sample, const QString& text);
  void replyFinished(ChatId id, int sample, const ReplyMetrics& metrics);
  // The reply called tools (TurnSettings::toolsJson went with the request): its content and
  // calls as the server read them, before its replyFinished. The calls run on this machine.
  void replyToolCalls(ChatId id, int sample, const QString& content, const QVector<ToolCallRecord>& calls);
  void replyFailed(ChatId id, const QString& sentence, const QString& detail);
  void turnDone(ChatId id);
  // The server named a request of this chat's turn (its response id, before any text): the
  // window tells the chat's sequences in that server's pool by it.
  void requestStarted(ChatId id, const QString& url, const QString& responseId);

 private:
  struct Job {
    std::shared_ptr<std::atomic<bool>> stop;
    std::vector<std::thread> threads;
    int running = 0;
    QString failure, detail;  // the first request's failure, said once the turn ends
  };
  void requestEnded(ChatId id);

  std::map<ChatId, Job> m_jobs;
};
