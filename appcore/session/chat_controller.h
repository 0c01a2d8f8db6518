#pragma once
// The UI thread's one owner of every chat's state: its record (messages, metrics, prompts,
// where it was forked from), the turn in flight (replying, a compare's samples, awaiting a
// pick), and the tokens the engine holds for it. Turns go to the EngineBridge as queued calls,
// or to the RemoteBridge for a chat on a remote server; both bridges' signals come back here
// (appcore/session/chat_controller_events.cpp) and nowhere else, so each rule about a turn is written
// once on this side (the engine side keeps only what the engine holds: engine/chat/chat_session.h).
// The window shows what this says (chatChanged, turnEnded) and asks it to act.

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include <QPointer>

#include <map>
#include <optional>

#include "appcore/chat/chat_record.h"
#include "appcore/chat/plain_error.h"
#include "appcore/chat/chat_types.h"

class ChatDatabase;
class EngineBridge;
class McpConnection;
class McpServers;
class RemoteBridge;
class RemoteEndpoints;

class ChatController : public QObject {
  Q_OBJECT
 public:
  struct Chat {
    ChatRecord record;
    bool replying = false;
    int numSamples = 1;  // of the turn in flight or awaiting a pick
    QVector<QString> samples;
    QVector<ReplyMetrics> sampleMetrics;
    bool awaitingPick = false;
    // A compare column picked while other samples still ran: those are stopped, and this one
    // becomes the reply when the turn ends (-1: none).
    int pickAtTurnEnd = -1;
    // Whether column `sample` can be picked now: the samples all ended, or this one did.
    bool canPick(int sample) const {
      if (numSamples < 2 || sample < 0 || sample >= samples.size()) return false;
      return awaitingPick || (replying && pickAtTurnEnd < 0 && sample < sampleMetrics.size() && !sampleMetrics[sample].isEmpty());
    }
    QStringList columnTitles;  // compare with "Vary settings": how each column samples
    int contextUsed = 0;       // tokens the engine holds for the chat
    // The meter, as the engine side last measured it (measure()): the conversation the model
    // reads next, in tokens, and the KV blocks the chat's sequences hold now.
    int conversationTokens = 0, blocksHeld = 0;
    int continuedTokens = 0;  // a Continue turn: the reply's tokens before it
    // A regenerated reply's versions, until the new reply's message exists (a compare's pick).
    QVector<QVector<MessageRecord>> pendingVersions;
    int pendingVersionsAt = -1;
    // The last turn did not fit and the chat's policy is "stop and ask": the prompt's tokens
    // and the context; the transcript offers the choices (resolveContextFull).
    int contextFullTokens = 0, contextLength = 0;
    // Since the reply in flight was last saved: it is saved as it streams in, at most once a
    // second (what a crash loses of it), marked interrupted until it ends.
    QElapsedTimer sinceSaved;
    QElapsedTimer sinceMeasured;  // the meter's last measure while a reply streams
    // A turn that offers the chat's tools (appcore/session/chat_controller_tools.cpp): the
    // settings it goes on with once a reply's calls are answered (unset: it offers none), the
    // calls it made so far, and the call now waiting for the user's consent or running (a
    // reply's calls run one at a time, in its order; the chat is replying meanwhile).
    std::optional<TurnSettings> toolTurn;
    int toolCallsMade = 0;
    struct ToolCallWait {
      QString callId;
      QString server, tool;  // the server's own names
      bool running = false;  // false: waiting for the user's consent
      int runId = -1;        // the connection's id for the call while it runs
      QPointer<McpConnection> connection;
      QString progress;      // the server's last word on a running call ("step 3 of 10")
    };
    std::optional<ToolCallWait> toolCall;
    bool toolStopRequested = false;  // Stop during a turn with tools: no further call or reply
  };
  enum class ToolConsent { allowOnce, alwaysAllow, deny };
  enum class ContextChoice { dropOldest, newChatFromRecent, cancel };
  // A search result: a chat whose title (message -1) or whose message `message` holds every
  // word; snippet as MessageHit's (the title itself for a title).
  struct SearchResult {
    ChatId chat = -1;
    int message = -1;
    QString snippet;
  };

  // bridge lives on the engine thread; db outlives the controller.
  ChatController(ChatDatabase& db, EngineBridge* bridge, QObject* parent = nullptr);

  // The chats saved in the database, parents before their forks; returns their ids in order.
  // A reply the app died in is kept marked interrupted, or dropped when it had no text yet.
  QVector<ChatId> restore();
  const Chat* chat(ChatId id) const;
  const std::map<ChatId, Chat>& chats() const { return m_chats; }

  // The shared system prompt (saved as a setting); chats that do not override it use it.
  QString sharedSystemPrompt() const { return m_sharedSystemPrompt; }
  void setSharedSystemPrompt(const QString& prompt);  // saved by saveSystemPrompts()
  void setChatSystemPrompt(ChatId id, bool overrides, const QString& prompt);
  void setContextPolicy(ChatId id, ContextPolicy policy);  // saved
  // The chat's own sampling settings (nullopt: the app's defaults), used from its next reply on; saved.
  void setChatSampling(ChatId id, const std::optional<TurnSettings>& sampling);
  void saveSystemPrompts(ChatId current);

  ChatId create();  // a new empty chat, saved
  // A new chat from `parent` at its message messageCount (1-based, clamped), saved. At a
  // reply it keeps messages 1..messageCount; at a user message it keeps those before it, and
  // *draft gets that message's text, to edit and send as the new branch. Whether and how
  // much it shares of the parent's KV blocks is the engine side's to say (forkDone).
  ChatId fork(ChatId parent, int messageCount, QString* draft = nullptr);
  // A copy of the chat as a chat of its own (not a fork in the tree), sharing the KV blocks it
  // holds; -1 while it replies or awaits a pick.
  ChatId duplicate(ChatId id);
  // A chat read from an export (appcore/chat/chat_export.h): a new chat of its own, saved.
  ChatId importChat(ChatRecord record);
  // The title, trimmed to one line of at most kMaxTitleLength; false (nothing changes) when empty.
  bool rename(ChatId id, const QString& title);
  static constexpr int kMaxTitleLength = 200;
  void setPinned(ChatId id, bool pinned);  // saved
  // The chat goes, from the database too; its KV blocks are freed and a turn in flight ends.
  // Its forks stay as chats of their own (chatRemoved says which).
  bool remove(ChatId id);
  // Undo of the last remove(): the chat back as it was, its forks under it again (its KV blocks
  // were freed: its next turn reads it again, the prefix cache serving what it can). Only the
  // chat removed last can come back, and only while the app runs.
  bool restoreRemoved(ChatId id);
  // Titles first (in the list's order of ids), then messages, best first.
  QVector<SearchResult> search(const QString& words, QString* error = nullptr);
  // Sends a user message (a first one names the chat) and starts the turn. columnTitles: how
  // each compare column samples (empty: all as settings).
  bool send(ChatId id, const QString& text, const TurnSettings& settings, const QStringList& columnTitles);
  // The last reply again, as a new version of it (the previous ones kept: "< 2 / 2 >"); an
  // unpicked compare is first settled on its first column.
  bool regenerate(ChatId id, const TurnSettings& settings, const QStringList& columnTitles);
  // A sent question edited: a new version of the conversation from that message (the old one
  // kept), and a reply to it.
  bool edit(ChatId id, int messageIndex, const QString& text, const TurnSettings& settings, const QStringList& columnTitles);
  // Shows another version of the conversation from message messageIndex (delta -1, +1).
  bool switchVersion(ChatId id, int messageIndex, int delta);
  void stop(ChatId id);
  // More of the chat's last reply, cut by its length limit or interrupted (its footer offers
  // Continue).
  bool continueReply(ChatId id, TurnSettings settings);
  // Compare: the chat continues with this sample. One that ended while others still run is
  // picked at once: the others are stopped, and it becomes the reply as the turn ends.
  bool pick(ChatId id, int sample);
  // The answer to "the context is full" (ContextPolicy::stopAndAsk): drop this chat's oldest
  // turns and reply; or a new chat (a fork holding every message) that replies with its oldest
  // turns dropped, this one left as it is; or cancel: the question is taken back (returned, for
  // the input). Returns the chat that replies (-1 on cancel).
  ChatId resolveContextFull(ChatId id, ContextChoice choice, TurnSettings settings, const QStringList& columnTitles,
                            QString* takenBack = nullptr);

  // Chats on remote engines (ChatRecord::remote): their turns go to `remote`, with the key
  // `endpoints` keeps for the chat's URL. Without them a chat set to a remote engine fails its
  // turns with a sentence saying so.
  void setRemote(RemoteBridge* remote, RemoteEndpoints* endpoints);
  // Where the chat's replies come from from its next turn on (unset: this machine); saved.
  // False while it replies or awaits a pick.
  bool setRemoteEngine(ChatId id, const RemoteEngineChoice& engine);

  // Where chats' tool calls go: the user's MCP servers (null, as without any: no chat offers
  // tools). A chat offers the tools of its servers (ChatRecord::tools) in each turn of one
  // reply; a call the model makes waits for the user's consent (answerToolCall) unless the
  // user chose "Always allow" for that tool, runs, and its result is the chat's next message
  // (role "tool"); the turn then goes on, until a reply calls nothing, Stop, or the chat's
  // limit of calls per turn. A chat on a remote engine sends the tools to its server, which
  // writes the calls; they run here the same way.
  void setTools(McpServers* servers);
  McpServers* tools() const { return m_tools; }
  // The chat's servers and its limit of calls per turn (from its next turn on); saved. False
  // while it replies.
  bool setChatTools(ChatId id, const ChatTools& tools);
  // The user's answer to the call waiting for consent; false when that call is not waiting.
  bool answerToolCall(ChatId id, const QString& callId, ToolConsent consent);

  // Asks the engine side for the chat's meter (chatChanged follows with the figures).
  void measure(ChatId id);
  // Asks what the message being typed would count if sent now (draftMeasured follows; not for
  // a chat on a remote engine, whose server counts its tokens).
  void measureDraft(ChatId id, const QString& draft);
  // A new engine is in use: replies in flight on the old one ended with it, and each chat's
  // next turn reads its messages afresh.
  void engineReplaced();

 signals:
  void chatAdded(ChatId id);
  void chatChanged(ChatId id);  // messages or samples changed (text streamed in, a pick)
  void turnEnded(ChatId id);
  void replyingChanged(ChatId id, bool replying);
  void titleChanged(ChatId id, const QString& title);
  void pinnedChanged(ChatId id, bool pinned);
  void systemPromptChanged(ChatId id);  // its own prompt or whether it overrides the shared one
  void engineChanged(ChatId id, const RemoteEngineChoice& engine);  // where its replies come from (unset: here)
  void activityChanged(ChatId id);  // a turn began: the chat is the most recent
  // The chat is gone; orphans: its forks, now chats of their own.
  void chatRemoved(ChatId id, const QVector<ChatId>& orphans);
  // One line for the status bar (the window shows it when `id` is the chat shown).
  void status(ChatId id, const QString& text);
  // measureDraft's answer: the draft's own tokens and the chat's with it and the reply's opening.
  void draftMeasured(ChatId id, const QString& draft, int draftTokens, int tokensWithDraft);

 private:
  void connectBridge();
  void connectRemote();
  // What either engine says of a turn (the local one through EngineBridge, a remote one
  // through RemoteBridge), handled once.
  void onReplyText(ChatId id, int sample, const QString& text);
  void onReplyFinished(ChatId id, int sample, const ReplyMetrics& m);
  void onReplyFailed(ChatId id, const PlainError& error);
  void onTurnDone(ChatId id, int contextUsed);
  void onReplyToolCalls(ChatId id, int sample, const QString& content, const QVector<ToolCallRecord>& calls);
  // The tool step between two replies of a turn (chat_controller_tools.cpp).
  QString offerTools(Chat& c, TurnSettings& settings);  // fills settings' tools; a sentence when none could be offered
  bool beginToolCalls(Chat& c);  // the last reply called tools: their step begins (false: it called none)
  void nextToolCall(Chat& c);
  void runToolCall(Chat& c);
  // A server's answer to a call (sender(): its McpConnection), for the chat that made it.
  void onToolCallFinished(int runId, const QString& text, bool isError, bool truncated);
  void onToolCallFailed(int runId, const QString& sentence);
  void onToolCallProgress(int runId, double done, double total, const QString& message);
  void onToolServerGone();
  Chat* chatRunning(const McpConnection* connection, int runId);
  void toolCallEnded(Chat& c, const QString& content);
  void answerCall(Chat& c, const ToolCallRecord& call, const QString& content);  // the tool message
  void stopToolStep(Chat& c);
  // The tool step ends here: a running call is stopped, and each call of the last reply
  // without an answer gets `why` as its answer (not saved: the caller saves). Whether any did.
  bool abandonToolCalls(Chat& c, const QString& why);
  void endTurn(Chat& c);  // the turn is over: not replying, saved, turnEnded
  // once: this turn's context policy, over the chat's and the app's.
  // toolsGoOn: the turn's next reply after its tool calls were answered (its count of calls goes on).
  void startTurn(Chat& c, TurnSettings settings, const QStringList& columnTitles, std::optional<ContextPolicy> once = {},
                 bool toolsGoOn = false);
  void save(const Chat& c);
  void attachPendingVersions(Chat& c);
  void dropEmptyReply(Chat& c);
  void add(Chat c);
  static void applyOwnSampling(const Chat& c, TurnSettings& settings);
  // Saves and adds chat, and has the engine side start it from source's parked sequence
  // (sharing what it holds of chat's messages; see EngineBridge::fork). Returns its id.
  ChatId addForkOf(ChatId source, Chat chat);
  void touch(Chat& c);  // the chat's last activity is now
  ChatId newId();
  // The record as it goes to disk: a reply in flight marked interrupted.
  static ChatRecord savedForm(const Chat& c);

  ChatDatabase& m_db;
  EngineBridge* m_bridge;
  RemoteBridge* m_remote = nullptr;
  RemoteEndpoints* m_endpoints = nullptr;
  McpServers* m_tools = nullptr;
  std::map<ChatId, Chat> m_chats;
  std::optional<ChatRecord> m_lastRemoved;  // what restoreRemoved() brings back
  QString m_sharedSystemPrompt;
};
