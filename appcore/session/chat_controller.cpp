// Every chat's state on the UI thread, and the flow of its turns through the bridge.
#include "appcore/session/chat_controller.h"

#include <QDateTime>
#include <QMetaObject>

#include <algorithm>
#include <utility>

#include "appcore/chat/chat_database.h"
#include "appcore/tools/mcp_connection.h"
#include "appcore/bridge/engine_bridge.h"
#include "appcore/remote/remote_bridge.h"
#include "appcore/remote/remote_endpoints.h"

namespace {
const QString kSharedSystemPromptKey = QStringLiteral("shared_system_prompt");
}  // namespace

ChatController::ChatController(ChatDatabase& db, EngineBridge* bridge, QObject* parent)
    : QObject(parent), m_db(db), m_bridge(bridge) {
  m_sharedSystemPrompt = m_db.setting(kSharedSystemPromptKey);
  connectBridge();
}

QVector<ChatId> ChatController::restore() {
  // Parents have smaller ids than their forks, so each parent is listed first.
  QVector<ChatId> ids;
  for (ChatRecord& r : m_db.loadChats()) {
    ids.append(r.id);
    Chat c;
    c.record = std::move(r);
    // The app died mid-reply: the reply keeps its text, marked interrupted; one with none goes.
    bool settled = settleInterruptedReply(c.record.messages);
    // Calls that waited for consent (or ran) when the app went: answered, the chat whole.
    settled = abandonToolCalls(c, tr("Not run: the app closed before the call ran.")) || settled;
    c.record.firstInView = std::min(c.record.firstInView, static_cast<int>(c.record.messages.size()));
    if (settled) save(c);
    add(std::move(c));
  }
  return ids;
}

const ChatController::Chat* ChatController::chat(ChatId id) const {
  auto it = m_chats.find(id);
  return it == m_chats.end() ? nullptr : &it->second;
}

// From the database, which never gives an id twice; without one (nothing is saved) any unused id does.
ChatId ChatController::newId() {
  const ChatId id = m_db.newChatId();
  return id > 0 ? id : (m_chats.empty() ? 1 : m_chats.rbegin()->first + 1);
}

void ChatController::add(Chat c) {
  const ChatId id = c.record.id;
  m_chats[id] = std::move(c);
  emit chatAdded(id);
}

ChatRecord ChatController::savedForm(const Chat& c) {
  ChatRecord record = c.record;
  if (c.replying && c.numSamples == 1 && !record.messages.isEmpty() && record.messages.last().role == QLatin1String("assistant"))
    record.messages.last().metrics.finishReason = ReplyMetrics::kInterrupted;
  return record;
}

void ChatController::save(const Chat& c) {
  // The reply in flight is on disk as what it is if the app dies now: interrupted.
  const bool inFlight = c.replying && c.numSamples == 1;
  if (!m_db.saveChat(inFlight ? savedForm(c) : c.record)) emit status(c.record.id, tr("Could not save the chat: %1").arg(m_db.lastError()));
}

void ChatController::setSharedSystemPrompt(const QString& prompt) { m_sharedSystemPrompt = prompt; }

void ChatController::setChatSystemPrompt(ChatId id, bool overrides, const QString& prompt) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return;
  ChatRecord& r = it->second.record;
  if (r.overridesSystemPrompt == overrides && r.systemPrompt == prompt) return;
  r.overridesSystemPrompt = overrides;
  r.systemPrompt = prompt;
  emit systemPromptChanged(id);
}

void ChatController::setContextPolicy(ChatId id, ContextPolicy policy) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return;
  it->second.record.contextPolicy = policy;
  save(it->second);
}

void ChatController::setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return;
  it->second.record.ownSampling = sampling;
  save(it->second);
  emit chatChanged(id);
}

void ChatController::saveSystemPrompts(ChatId current) {
  m_db.setSetting(kSharedSystemPromptKey, m_sharedSystemPrompt);
  if (const Chat* c = chat(current)) save(*c);
}

void ChatController::touch(Chat& c) {
  c.record.lastActive = std::max(QDateTime::currentMSecsSinceEpoch(), c.record.lastActive + 1);
}

namespace {
// A message's first words, on one line, at most `most` characters: cut at a word's end where
// one is near, and marked cut ("…").
QString firstWords(const QString& text, int most) {
  const QString line = text.simplified();
  if (line.size() <= most) return line;
  QString cut = line.left(most);
  if (const int space = cut.lastIndexOf(QLatin1Char(' ')); space >= most / 2) cut.truncate(space);
  return cut.trimmed() + QStringLiteral("…");
}
QString gist(const QString& text) { return firstWords(text, 32); }  // where a fork branches
// Lower case without accents, as the message index folds them ("Café" is found by "cafe").
QString folded(const QString& text) {
  QString out;
  for (const QChar ch : text.normalized(QString::NormalizationForm_D))
    if (ch.category() != QChar::Mark_NonSpacing) out += ch.toLower();
  return out.simplified();
}
}  // namespace

ChatId ChatController::create() {
  Chat c;
  c.record.id = newId();
  c.record.title = tr("New chat %1").arg(c.record.id);
  touch(c);
  save(c);
  const ChatId id = c.record.id;
  add(std::move(c));
  measure(id);
  return id;
}

ChatId ChatController::fork(ChatId parentId, int messageCount, QString* draft) {
  auto it = m_chats.find(parentId);
  if (it == m_chats.end()) return -1;
  const Chat& parent = it->second;
  messageCount = std::clamp<int>(messageCount, 0, static_cast<int>(parent.record.messages.size()));
  // A reply that called tools goes with its calls' answers: the model reads them together.
  const QVector<MessageRecord>& kept = parent.record.messages;
  while (messageCount > 0 && messageCount < kept.size() && kept[messageCount].role == QLatin1String("tool") &&
         (!kept[messageCount - 1].toolCalls.isEmpty() || kept[messageCount - 1].role == QLatin1String("tool")))
    ++messageCount;
  QString asked;  // forking at a question is asking it again, differently: the child stops before it
  if (messageCount > 0 && parent.record.messages[messageCount - 1].role == QLatin1String("user")) {
    asked = parent.record.messages[messageCount - 1].content;
    if (draft) *draft = asked;
    --messageCount;
  }
  Chat child;
  child.record.id = newId();
  // Named after where it branches (the question asked again, or the last message it keeps),
  // that first: the list shows it under its parent with "fork of …", and a narrow list or the
  // KV legend cuts a title's end, where the parent's name would have pushed what tells it apart.
  const QString at = !asked.isEmpty() ? asked : messageCount > 0 ? parent.record.messages[messageCount - 1].content : QString();
  child.record.title = (at.trimmed().isEmpty() ? tr("%1 (from the start)").arg(parent.record.title)
                                               : tr("“%1” ‹ %2").arg(gist(at), parent.record.title))
                           .left(kMaxTitleLength);
  touch(child);
  child.record.parentId = parentId;
  child.record.forkedAtMessage = messageCount;
  child.record.overridesSystemPrompt = parent.record.overridesSystemPrompt;
  child.record.systemPrompt = parent.record.systemPrompt;
  child.record.ownSampling = parent.record.ownSampling;  // a branch is compared under the same settings
  child.record.remote = parent.record.remote;            // and on the same engine
  child.record.tools = parent.record.tools;              // with the same tools
  child.record.messages = parent.record.messages.mid(0, messageCount);
  child.record.firstInView = std::min(parent.record.firstInView, messageCount);
  // The engine side shares the parent's parked sequence up to where the child's messages end
  // (a fork at that token: copy-on-write, nothing recomputed) when the parent holds them;
  // otherwise the child's first turn submits its chat whole and the prefix cache serves the
  // full blocks it shares with the parent. forkDone says which.
  return addForkOf(parentId, std::move(child));
}

ChatId ChatController::addForkOf(ChatId source, Chat chat) {
  const ChatId id = chat.record.id;
  const ChatMessages messages = chat.record.engineMessages(m_sharedSystemPrompt);
  const bool remote = chat.record.remote.isSet();
  save(chat);
  add(std::move(chat));
  if (remote) {
    // A remote server holds no sequence of ours to share: the fork's first turn sends its
    // conversation whole, and the server's own prefix cache decides what it computes again.
    emit status(id, tr("Forked: on a remote engine the next turn sends this chat's messages again; the server's prefix "
                       "cache decides what is recomputed"));
    return id;
  }
  onEngineThread(m_bridge, [source, id, messages](EngineBridge& b) { b.fork(source, id, messages); });
  return id;
}

ChatId ChatController::duplicate(ChatId sourceId) {
  auto it = m_chats.find(sourceId);
  if (it == m_chats.end() || it->second.replying || it->second.awaitingPick) return -1;
  Chat copy;
  copy.record = it->second.record;
  copy.record.id = newId();
  copy.record.title = tr("%1 (copy)").arg(it->second.record.title).left(kMaxTitleLength);
  copy.record.parentId = -1;
  copy.record.forkedAtMessage = -1;
  copy.record.pinned = false;
  touch(copy);
  // The bridge's fork shares what the source holds: the copy's next turn computes only its own.
  return addForkOf(sourceId, std::move(copy));
}

ChatId ChatController::importChat(ChatRecord record) {
  Chat c;
  c.record = std::move(record);
  c.record.id = newId();
  c.record.parentId = -1;
  c.record.forkedAtMessage = -1;
  c.record.title = c.record.title.simplified().left(kMaxTitleLength);
  if (c.record.title.isEmpty()) c.record.title = tr("Imported chat %1").arg(c.record.id);
  c.record.firstInView = std::clamp(c.record.firstInView, 0, static_cast<int>(c.record.messages.size()));
  settleInterruptedReply(c.record.messages);
  touch(c);
  save(c);
  const ChatId id = c.record.id;
  add(std::move(c));
  measure(id);
  return id;
}

bool ChatController::rename(ChatId id, const QString& title) {
  auto it = m_chats.find(id);
  const QString t = title.simplified().left(kMaxTitleLength);
  if (it == m_chats.end() || t.isEmpty()) return false;
  if (t == it->second.record.title) return true;
  it->second.record.title = t;
  save(it->second);
  emit titleChanged(id, t);
  return true;
}

void ChatController::setPinned(ChatId id, bool pinned) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.record.pinned == pinned) return;
  it->second.record.pinned = pinned;
  save(it->second);
  emit pinnedChanged(id, pinned);
}

bool ChatController::remove(ChatId id) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return false;
  if (!m_db.removeChat(id) && m_db.isOpen()) {
    emit status(id, tr("Could not delete the chat: %1").arg(m_db.lastError()));
    return false;
  }
  // Frees its sequences; a turn in flight is aborted with them, and its signals find no chat.
  if (it->second.toolCall && it->second.toolCall->running && it->second.toolCall->connection)
    it->second.toolCall->connection->stopCall(it->second.toolCall->runId);
  // Its blocks on disk go too, but those another chat's history also starts with.
  ChatMessages gone;
  QVector<ChatMessages> others;
  if (!it->second.record.remote.isSet()) {
    gone = it->second.record.engineMessages(m_sharedSystemPrompt);
    for (const auto& [otherId, c] : m_chats)
      if (otherId != id) others.append(c.record.engineMessages(m_sharedSystemPrompt));
  }
  onEngineThread(m_bridge, [id, gone = std::move(gone), others = std::move(others)](EngineBridge& b) {
    b.release(id);
    if (!gone.isEmpty()) b.forgetOnDisk(gone, others);
  });
  if (m_remote) m_remote->stop(id);  // a remote server stops generating for it too
  m_lastRemoved = savedForm(it->second);
  m_chats.erase(it);
  QVector<ChatId> orphans;
  for (const auto& [childId, c] : m_chats)
    if (c.record.parentId == id) orphans.append(childId);
  emit chatRemoved(id, orphans);
  return true;
}

bool ChatController::restoreRemoved(ChatId id) {
  if (!m_lastRemoved || m_lastRemoved->id != id || m_chats.count(id)) return false;
  Chat c;
  c.record = *std::exchange(m_lastRemoved, std::nullopt);
  settleInterruptedReply(c.record.messages);  // a reply it was writing: kept as far as it came
  if (!m_db.saveChat(c.record)) {
    emit status(id, tr("Could not bring the chat back: %1").arg(m_db.lastError()));
    m_lastRemoved = std::move(c.record);
    return false;
  }
  add(std::move(c));
  measure(id);
  return true;
}

QVector<ChatController::SearchResult> ChatController::search(const QString& words, QString* error) {
  QVector<SearchResult> results;
  const QStringList terms = folded(words).split(QLatin1Char(' '), Qt::SkipEmptyParts);
  if (terms.isEmpty()) return results;
  for (const auto& [id, c] : m_chats)
    if (const QString title = folded(c.record.title);
        std::all_of(terms.begin(), terms.end(), [&](const QString& t) { return title.contains(t); }))
      results.append({.chat = id, .message = -1, .snippet = c.record.title});
  constexpr int kMaxMessageHits = 200;
  for (const MessageHit& hit : m_db.searchMessages(words, kMaxMessageHits, error)) {
    const Chat* c = chat(hit.chat);
    if (c && hit.message < c->record.messages.size()) results.append({.chat = hit.chat, .message = hit.message, .snippet = hit.snippet});
  }
  return results;
}

bool ChatController::send(ChatId id, const QString& text, const TurnSettings& settings, const QStringList& columnTitles) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || text.isEmpty() || it->second.replying) return false;
  Chat& c = it->second;
  if (c.awaitingPick) pick(id, 0);  // an unpicked compare continues with its first column
  if (c.record.messages.isEmpty() && c.record.title.startsWith(tr("New chat"))) {
    c.record.title = firstWords(text, 40);
    emit titleChanged(id, c.record.title);
  }
  c.record.messages.append({.role = QStringLiteral("user"), .content = text});
  startTurn(c, settings, columnTitles);
  return true;
}

bool ChatController::regenerate(ChatId id, const TurnSettings& settings, const QStringList& columnTitles) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying) return false;
  Chat& c = it->second;
  if (c.awaitingPick) {
    c.awaitingPick = false;
    onEngineThread(m_bridge, [id](EngineBridge& b) { b.pickSample(id, 0); });
  }
  if (!c.record.messages.isEmpty() && c.record.messages.last().role == QLatin1String("assistant")) {
    c.pendingVersionsAt = static_cast<int>(c.record.messages.size()) - 1;
    c.pendingVersions = takeVersions(c.record.messages, c.pendingVersionsAt);
  }
  if (c.record.messages.isEmpty()) return false;
  startTurn(c, settings, columnTitles);
  return true;
}

bool ChatController::edit(ChatId id, int index, const QString& text, const TurnSettings& settings, const QStringList& columnTitles) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying || text.isEmpty()) return false;
  Chat& c = it->second;
  if (index < 0 || index >= c.record.messages.size() || c.record.messages[index].role != QLatin1String("user")) return false;
  if (c.awaitingPick) pick(id, 0);
  QVector<QVector<MessageRecord>> versions = takeVersions(c.record.messages, index);
  MessageRecord edited{.role = QStringLiteral("user"), .content = text, .otherVersions = std::move(versions)};
  edited.versionIndex = static_cast<int>(edited.otherVersions.size());  // the new one goes last
  c.record.messages.append(std::move(edited));
  c.record.firstInView = std::min(c.record.firstInView, index);
  startTurn(c, settings, columnTitles);
  return true;
}

bool ChatController::switchVersion(ChatId id, int index, int delta) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying || it->second.awaitingPick) return false;
  Chat& c = it->second;
  if (index < 0 || index >= c.record.messages.size()) return false;
  if (!::switchVersion(c.record.messages, index, c.record.messages[index].versionIndex + delta)) return false;
  c.record.firstInView = std::min(c.record.firstInView, index);
  c.contextFullTokens = 0;
  save(c);
  emit chatChanged(id);
  measure(id);
  return true;
}

// A reply that never started goes; when it was a new version, the latest one before it is shown.
void ChatController::dropEmptyReply(Chat& c) {
  if (c.numSamples == 1) ::dropEmptyReply(c.record.messages);
}

// The regenerated reply's message exists now: it carries the versions it replaces.
void ChatController::attachPendingVersions(Chat& c) {
  if (c.pendingVersionsAt < 0 || c.pendingVersionsAt >= c.record.messages.size()) return;
  MessageRecord& m = c.record.messages[c.pendingVersionsAt];
  m.otherVersions = std::move(c.pendingVersions);
  m.versionIndex = static_cast<int>(m.otherVersions.size());
  c.pendingVersions.clear();
  c.pendingVersionsAt = -1;
}

// A chat's own sampling settings replace the app's for its replies and its samples; columns of
// "Vary settings" keep theirs (that is what the columns are for), all but the reply's length.
void ChatController::applyOwnSampling(const Chat& c, TurnSettings& settings) {
  if (!c.record.ownSampling) return;
  if (settings.columns.empty()) return takeSampling(settings, *c.record.ownSampling);
  for (TurnSettings& column : settings.columns) column.maxTokens = c.record.ownSampling->maxTokens;
  settings.maxTokens = c.record.ownSampling->maxTokens;
}

void ChatController::startTurn(Chat& c, TurnSettings settings, const QStringList& columnTitles, std::optional<ContextPolicy> once,
                               bool toolsGoOn) {
  touch(c);
  emit activityChanged(c.record.id);
  if (once) settings.contextPolicy = *once;
  else if (c.record.contextPolicy != ContextPolicy::appDefault) settings.contextPolicy = c.record.contextPolicy;
  applyOwnSampling(c, settings);
  if (!toolsGoOn) {
    c.toolCallsMade = 0;
    c.toolStopRequested = false;
  }
  const QString noTools = offerTools(c, settings);
  c.contextFullTokens = 0;
  c.record.lastError = {};
  const ChatMessages messages = c.record.engineMessages(m_sharedSystemPrompt);
  c.numSamples = settings.numSamples;
  c.columnTitles = columnTitles;
  c.replying = true;
  c.awaitingPick = false;
  c.pickAtTurnEnd = -1;
  c.samples = QVector<QString>(c.numSamples);
  c.sampleMetrics = QVector<ReplyMetrics>(c.numSamples);
  c.continuedTokens = 0;
  c.sinceSaved.invalidate();
  if (c.numSamples == 1) {
    c.record.messages.append({.role = QStringLiteral("assistant")});
    attachPendingVersions(c);
  }
  save(c);
  emit replyingChanged(c.record.id, true);
  if (c.record.remote.isSet()) {
    if (!m_remote) {
      onReplyFailed(c.record.id, {tr("This chat runs on a remote engine, and this window has none set up."), c.record.remote.url});
      onTurnDone(c.record.id, 0);
      return;
    }
    const QString key = m_endpoints ? m_endpoints->apiKey(c.record.remote.url) : QString();
    m_remote->submit(c.record.id, c.record.remote, key, messages, settings);
  } else {
    onEngineThread(m_bridge, [id = c.record.id, messages, settings](EngineBridge& b) { b.submit(id, messages, settings); });
  }
  measure(c.record.id);  // the meter counts the question at once, not when the reply has ended
  c.sinceMeasured.invalidate();  // and the reply's first text measures again (its blocks computed by then)
  if (!noTools.isEmpty()) emit status(c.record.id, noTools);
  emit chatChanged(c.record.id);
}

void ChatController::setRemote(RemoteBridge* remote, RemoteEndpoints* endpoints) {
  m_remote = remote;
  m_endpoints = endpoints;
  connectRemote();
}

bool ChatController::setRemoteEngine(ChatId id, const RemoteEngineChoice& engine) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying || it->second.awaitingPick) return false;
  Chat& c = it->second;
  if (c.record.remote == engine) return true;
  c.record.remote = engine;
  // What the local engine held for it is of no use to the other engine: freed.
  onEngineThread(m_bridge, [id](EngineBridge& b) { b.release(id); });
  c.contextUsed = 0;
  save(c);
  emit engineChanged(id, engine);
  emit status(id, engine.isSet() ? tr("This chat now runs on %1 at %2").arg(engine.model, engine.url)
                                 : tr("This chat now runs on this machine"));
  emit chatChanged(id);
  measure(id);
  return true;
}

bool ChatController::continueReply(ChatId id, TurnSettings settings) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying || it->second.awaitingPick) return false;
  Chat& c = it->second;
  if (c.record.remote.isSet()) return false;  // a chat API has no "continue this reply"
  if (c.record.messages.isEmpty() || c.record.messages.last().role != QLatin1String("assistant") ||
      (c.record.messages.last().metrics.finishReason != QLatin1String("length") &&
       c.record.messages.last().metrics.finishReason != ReplyMetrics::kInterrupted))
    return false;
  if (c.record.contextPolicy != ContextPolicy::appDefault) settings.contextPolicy = c.record.contextPolicy;
  applyOwnSampling(c, settings);
  c.record.lastError = {};
  settings.numSamples = 1;
  settings.columns.clear();
  settings.continuesReply = true;
  c.numSamples = 1;
  c.columnTitles.clear();
  c.replying = true;
  c.continuedTokens = c.record.messages.last().metrics.numTokens;
  c.contextFullTokens = 0;
  c.sinceSaved.invalidate();
  emit replyingChanged(id, true);
  onEngineThread(m_bridge, [id, messages = c.record.engineMessages(m_sharedSystemPrompt), settings](EngineBridge& b) { b.submit(id, messages, settings); });
  emit chatChanged(id);
  return true;
}

void ChatController::stop(ChatId id) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || !it->second.replying) return;
  const Chat* c = &it->second;
  if (c->toolTurn) {
    it->second.toolStopRequested = true;
    if (c->toolCall) return stopToolStep(it->second);  // between replies: the call waiting or running ends the turn
  }
  if (c->record.remote.isSet()) {
    if (m_remote) m_remote->stop(id);
    return;
  }
  onEngineThread(m_bridge, [id](EngineBridge& b) { b.stop(id); });
}

bool ChatController::pick(ChatId id, int sample) {
  auto it = m_chats.find(id);
  if (it == m_chats.end()) return false;
  Chat& c = it->second;
  if (!c.canPick(sample)) return false;
  if (!c.awaitingPick) {
    c.pickAtTurnEnd = sample;
    stop(id);
    emit chatChanged(id);
    return true;
  }
  c.awaitingPick = false;
  c.record.messages.append({.role = QStringLiteral("assistant"), .content = c.samples[sample], .metrics = c.sampleMetrics[sample]});
  attachPendingVersions(c);
  emit status(id, c.sampleMetrics[sample].summary());  // the picked reply's figures, not the last sample's to end
  c.numSamples = 1;
  if (!c.record.remote.isSet()) onEngineThread(m_bridge, [id, sample](EngineBridge& b) { b.pickSample(id, sample); });
  save(c);
  emit chatChanged(id);
  measure(id);
  return true;
}

ChatId ChatController::resolveContextFull(ChatId id, ContextChoice choice, TurnSettings settings,
                                          const QStringList& columnTitles, QString* takenBack) {
  auto it = m_chats.find(id);
  if (it == m_chats.end() || it->second.replying || it->second.contextFullTokens == 0) return -1;
  Chat& c = it->second;
  c.contextFullTokens = 0;
  if (choice == ContextChoice::cancel) {
    if (!c.record.messages.isEmpty() && c.record.messages.last().role == QLatin1String("user")) {
      if (takenBack) *takenBack = c.record.messages.last().content;
      c.record.messages.removeLast();
    }
    save(c);
    emit chatChanged(id);
    measure(id);
    return -1;
  }
  if (choice == ContextChoice::dropOldest) {
    startTurn(c, settings, columnTitles, ContextPolicy::dropOldest);
    return id;
  }
  Chat child;
  child.record = c.record;
  child.record.id = newId();
  child.record.title = tr("%1 (recent)").arg(c.record.title);
  child.record.parentId = id;
  child.record.forkedAtMessage = static_cast<int>(c.record.messages.size());
  child.record.contextPolicy = ContextPolicy::appDefault;
  child.record.pinned = false;
  const ChatId childId = child.record.id;
  save(child);
  add(std::move(child));
  emit chatChanged(id);
  startTurn(m_chats[childId], settings, columnTitles, ContextPolicy::dropOldest);
  return childId;
}

void ChatController::measureDraft(ChatId id, const QString& draft) {
  if (const Chat* c = chat(id); c && !c->record.remote.isSet())
    onEngineThread(m_bridge, [id, draft, m = c->record.engineMessages(m_sharedSystemPrompt)](EngineBridge& b) { b.measureDraft(id, m, draft); });
}

void ChatController::measure(ChatId id) {
  // A remote chat's tokens are the server's to count (its replies' usage says them).
  if (const Chat* c = chat(id); c && !c->record.remote.isSet())
    onEngineThread(m_bridge, [id, m = c->record.engineMessages(m_sharedSystemPrompt)](EngineBridge& b) { b.measure(id, m); });
}

void ChatController::engineReplaced() {
  for (auto& [id, c] : m_chats) {
    if (c.record.remote.isSet()) continue;  // its engine is elsewhere, and still there
    // Its tool step ends: the next reply would have run on the engine that went.
    if (abandonToolCalls(c, tr("Not run: the model was replaced before the call ran."))) save(c);
    if (c.replying) {
      c.replying = false;
      if (c.numSamples == 1) settleInterruptedReply(c.record.messages);  // its engine went with it
      emit replyingChanged(id, false);
      save(c);
    }
    c.awaitingPick = false;
    c.contextUsed = 0;
    measure(id);
  }
}
