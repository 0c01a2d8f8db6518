// What the engines say of a turn, handled once for both: the local engine's EngineBridge and a
// remote server's RemoteBridge (appcore/remote/remote_bridge.h) emit the same replies, and each
// rule about what they mean for a chat (streamed text saved, a sample's figures, a failure said
// in the chat, the turn's end) is written here.
#include "appcore/session/chat_controller.h"

#include "appcore/bridge/engine_bridge.h"
#include "appcore/chat/chat_database.h"
#include "appcore/remote/remote_bridge.h"

#include <utility>

namespace {
constexpr int kStreamSaveIntervalMs = 1000;    // a reply in flight is saved at most this often
constexpr int kStreamMeasureIntervalMs = 500;  // and measured for the meter at most this often
}  // namespace

void ChatController::onReplyText(ChatId id, int sample, const QString& text) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.replying) return;
  Chat& c = it->second;
  if (c.numSamples == 1) {
    c.record.messages.last().content += text;
    if (!c.sinceSaved.isValid() || c.sinceSaved.elapsed() >= kStreamSaveIntervalMs) {
      save(c);
      c.sinceSaved.start();
    }
  } else if (sample < c.samples.size()) {
    c.samples[sample] += text;
  }
  // The meter follows the reply as it streams (a measure tokenizes the chat: twice a second).
  if (c.numSamples == 1 && (!c.sinceMeasured.isValid() || c.sinceMeasured.elapsed() >= kStreamMeasureIntervalMs)) {
    measure(id);
    c.sinceMeasured.start();
  }
  emit chatChanged(id);
}

void ChatController::onReplyFinished(ChatId id, int sample, const ReplyMetrics& m) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.replying) return;
  Chat& c = it->second;
  if (c.numSamples == 1) {
    c.record.messages.last().metrics = m;
    c.record.messages.last().metrics.numTokens += c.continuedTokens;  // the whole reply's
  } else if (sample < c.sampleMetrics.size()) {
    c.sampleMetrics[sample] = m;
    emit chatChanged(id);  // its column can be picked now
  }
  emit status(id, m.summary());
}

void ChatController::onReplyFailed(ChatId id, const PlainError& error) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return;
  // Said in the chat, where it happened: a plain sentence, the engine's words behind "details".
  it->second.record.lastError = error;
  // A reply that never started leaves no empty message behind.
  if (it->second.replying) dropEmptyReply(it->second);
  save(it->second);  // the note stays with the chat across a restart
  emit status(id, QString());
  emit chatChanged(id);
}

void ChatController::onReplyToolCalls(ChatId id, int sample, const QString& content, const QVector<ToolCallRecord>& calls) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.replying || it->second.numSamples != 1 || sample != 0) return;
  // The reply read whole: what streamed was only what was surely its content.
  MessageRecord& reply = it->second.record.messages.last();
  reply.content = content;
  reply.toolCalls = calls;
  emit chatChanged(id);
}

void ChatController::onTurnDone(ChatId id, int contextUsed) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.replying) return;
  Chat& c = it->second;
  c.contextUsed = contextUsed;
  // A reply that called the chat's tools: their step comes before the turn goes on.
  if (c.numSamples == 1 && beginToolCalls(c)) return;
  endTurn(c);
}

void ChatController::endTurn(Chat& c) {
  const ChatId id = c.record.id;
  c.replying = false;
  c.toolTurn.reset();
  c.toolCall.reset();
  emit replyingChanged(id, false);
  if (c.numSamples > 1) {
    c.awaitingPick = true;
    if (const int picked = std::exchange(c.pickAtTurnEnd, -1); picked >= 0) pick(id, picked);
  } else {
    save(c);
  }
  emit turnEnded(id);
  measure(id);
}

void ChatController::connectRemote() {
  if (!m_remote) return;
  connect(m_remote, &RemoteBridge::replyText, this, &ChatController::onReplyText);
  connect(m_remote, &RemoteBridge::replyFinished, this, &ChatController::onReplyFinished);
  connect(m_remote, &RemoteBridge::replyToolCalls, this, &ChatController::onReplyToolCalls);
  connect(m_remote, &RemoteBridge::replyFailed, this,
          [this](ChatId id, const QString& sentence, const QString& detail) { onReplyFailed(id, {sentence, detail}); });
  connect(m_remote, &RemoteBridge::turnDone, this, [this](ChatId id) { onTurnDone(id, 0); });
}

void ChatController::connectBridge() {
  connect(m_bridge, &EngineBridge::replyText, this, &ChatController::onReplyText);
  connect(m_bridge, &EngineBridge::replyFinished, this, &ChatController::onReplyFinished);
  connect(m_bridge, &EngineBridge::replyToolCalls, this, &ChatController::onReplyToolCalls);
  connect(m_bridge, &EngineBridge::replyFailed, this,
          [this](ChatId id, const QString& e) { onReplyFailed(id, explainReplyError(e)); });
  connect(m_bridge, &EngineBridge::contextTrimmed, this, [this](ChatId id, int numDropped) {
    auto it = m_chats.find(id);
    if (it == m_chats.end()) return;
    ChatRecord& r = it->second.record;
    r.firstInView = std::min(r.firstInView + numDropped, static_cast<int>(r.messages.size()));
    save(it->second);
    emit status(id, r.firstInView == 1
                        ? tr("The chat outgrew the model's context: its oldest message is now outside the model's view.")
                        : tr("The chat outgrew the model's context: its %1 oldest messages are now outside the model's view.").arg(r.firstInView));
    emit chatChanged(id);
  });
  connect(m_bridge, &EngineBridge::contextFull, this, [this](ChatId id, int numTokens, int contextLength) {
    auto it = m_chats.find(id);
    if (it == m_chats.end() || !it->second.replying) return;
    Chat& c = it->second;
    dropEmptyReply(c);
    c.replying = false;
    c.contextFullTokens = numTokens;
    c.contextLength = contextLength;
    emit replyingChanged(id, false);
    save(c);
    emit status(id, tr("The context is full: %1 of %2 tokens.").arg(numTokens).arg(contextLength));
    emit chatChanged(id);
    emit turnEnded(id);
    measure(id);
  });
  connect(m_bridge, &EngineBridge::turnDone, this, &ChatController::onTurnDone);
  connect(m_bridge, &EngineBridge::forkDone, this, [this](ChatId child, bool shares, int contextUsed) {
    auto it = m_chats.find(child);
    if (it == m_chats.end()) return;
    it->second.contextUsed = shares ? contextUsed : 0;
    emit status(child, shares ? tr("Forked: the new chat shares the parent's KV blocks of its %1 tokens (copy-on-write, "
                                   "nothing recomputed)").arg(contextUsed)
                              : tr("Forked: the new chat's first turn reads its messages again (the prefix cache serves "
                                   "the full blocks the parent still holds)"));
    emit chatChanged(child);
    measure(child);
  });
  connect(m_bridge, &EngineBridge::draftMeasured, this, &ChatController::draftMeasured);
  connect(m_bridge, &EngineBridge::chatMeasured, this, [this](ChatId id, int tokens, int blocks) {
    auto it = m_chats.find(id);
    if (it == m_chats.end()) return;
    it->second.conversationTokens = tokens;
    it->second.blocksHeld = blocks;
    emit chatChanged(id);
  });
}
