#pragma once
// One chat's messages as the user reads them: who said what, the text as Markdown (see
// message_markdown.h; a code block's "copy" copies it), a reply's <think> part folded under
// "Thinking" (a click opens it; see reply_thinking.h), and under each message its footer: a
// reply's tokens, tokens/s and time to first token, and links to fork the chat there or copy
// the message. A reply's tool calls are cards (the tool, its arguments as indented JSON, and for
// the call waiting for consent Allow once / Always allow / Deny; Stop while it runs); a tool's
// result follows as its own message, folded under one line that opens it. A palette change (light or dark theme) draws it all again in the new colours. While a reply streams,
// showChat runs ~30 times a second; it rebuilds only the messages that changed since the last
// call (the streaming one), not the whole chat.

#include <QSet>
#include <QTextBrowser>
#include <QVector>

#include "appcore/chat/chat_record.h"
#include "appcore/chat/plain_error.h"

class QTextCursor;

// The chat's tool call that waits for the user's consent or runs now (ChatController's
// ToolCallWait, as the transcript needs it); an empty callId: none.
struct PendingToolCall {
  QString callId;
  QString server, tool;
  bool running = false;
  QString progress;
};

class TranscriptView : public QTextBrowser {
  Q_OBJECT
 public:
  explicit TranscriptView(QWidget* parent = nullptr);
  // contextFullTokens > 0: the chat's last turn did not fit in contextLength tokens, and the
  // transcript ends with a notice offering what to do (contextChoice).
  // error: the last turn failed; said at the end, its detail behind a "details" link.
  void showChat(const ChatRecord& chat, bool replying, int contextFullTokens = 0, int contextLength = 0,
                const PlainError& error = {}, const PendingToolCall& pending = {});

  // Scrolls to message `index` of the chat shown and selects the first of `words` found in it
  // (a search result opened), else puts the cursor at the message's start.
  void revealMessage(int index, const QStringList& words);

  // The HTML of one message body, for views that show a reply on its own (compare columns).
  // Links are plain text there: such a view would navigate to them itself.
  static QString messageHtml(const QString& text);

  // Opens or folds the thinking of message `index` (what its "Thinking" line does).
  void toggleThinking(int index);
  bool thinkingExpanded(int index) const { return m_expandedThinking.contains(index); }
  void toggleErrorDetail();  // the failed turn's "details": shown or hidden
  void toggleToolResult(int index);  // a tool message's result: opened or folded
  bool toolResultExpanded(int index) const { return m_expandedResults.contains(index); }

 signals:
  void forkRequested(int messageCount);  // fork keeping messages 1..messageCount
  void copyRequested(int messageIndex);
  void continueRequested();  // the last reply, cut by its length: write more of it
  void editRequested(int messageIndex);                // a sent question, to edit into a new version
  void versionRequested(int messageIndex, int delta);  // "<" (-1) or ">" (+1) on a message's versions
  // The context-full notice's links: "drop" (the oldest turns), "recent" (a new chat from the
  // recent messages), "cancel" (take the question back).
  void contextChoice(const QString& choice);
  void codeCopied(const QString& code);  // a code block's "copy": the code is on the clipboard
  // The card of the call waiting for consent: "allow" (once), "always" (this tool from now
  // on) or "deny"; and Stop on a running call.
  void toolCallAnswered(const QString& callId, const QString& answer);
  void toolCallStopRequested();

 protected:
  void changeEvent(QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void scrollToEnd();
  bool m_followEnd = true;  // the view keeps to the document's end as it grows
  // What the document shows of one message, and where it starts (its header block).
  struct ShownMessage {
    bool user = false;
    QString content;  // a reply: its answer, the thinking apart
    QString thinking;  // a reply's <think> part
    bool hasThinking = false, thinkingOpen = false, thinkingExpanded = false;
    QString footer;  // plain text of the footer, "" when none; the links follow from the index
    bool actions = false;  // fork / copy links (not while the reply streams)
    bool canContinue = false;  // the last reply, cut by its length: a Continue link
    int versionIndex = 0, numVersions = 1;  // "< k / n >" when there are several
    bool outOfView = false;  // dropped from the model's view when the chat outgrew the context
    QString notice;          // non-empty: not a message but the context-full notice, this text
    PlainError error;        // sentence non-empty: not a message but the failed turn's notice
    bool detailShown = false;
    // A reply's tool calls, each as its card shows it.
    struct Call {
      QString id{}, name{}, arguments{};  // arguments: indented JSON
      enum class State { made, waiting, running } state = State::made;
      QString server{}, progress{};  // the waiting or running call's
      bool operator==(const Call&) const = default;
    };
    QVector<Call> calls;
    bool toolResult = false;  // a tool message: `content` is its result
    QString toolName;
    bool resultExpanded = false, resultFailed = false;
    int start = 0;
    bool operator==(const ShownMessage& o) const {
      return user == o.user && actions == o.actions && canContinue == o.canContinue && content == o.content && footer == o.footer &&
             thinking == o.thinking && hasThinking == o.hasThinking && thinkingOpen == o.thinkingOpen &&
             thinkingExpanded == o.thinkingExpanded &&
             versionIndex == o.versionIndex && numVersions == o.numVersions &&
             outOfView == o.outOfView && notice == o.notice && error.sentence == o.error.sentence &&
             error.detail == o.error.detail && detailShown == o.detailShown && calls == o.calls && toolResult == o.toolResult &&
             toolName == o.toolName && resultExpanded == o.resultExpanded && resultFailed == o.resultFailed;
    }
  };
  void appendMessage(QTextCursor& cursor, int index, const ShownMessage& m);
  void appendNotice(QTextCursor& cursor, const ShownMessage& m);
  void appendThinking(QTextCursor& c, int index, const ShownMessage& m);
  void appendError(QTextCursor& cursor, const ShownMessage& m);
  void appendToolCalls(QTextCursor& c, const ShownMessage& m);
  void appendToolResult(QTextCursor& c, int index, const ShownMessage& m);
  // Shows `shown`, rebuilding the document from the first message that differs from m_shown.
  void render(ChatId chat, QVector<ShownMessage> shown, bool whole = false);

  ChatId m_shownChat = -1;
  QVector<ShownMessage> m_shown;
  int m_shownCharacters = 0;  // the document's size after the last showChat: edited since?
  bool m_errorDetailShown = false;  // the failed turn's "details" is open
  QSet<int> m_expandedThinking;  // of the chat shown: the messages whose thinking is open
  QSet<int> m_expandedResults;   // and the tool messages whose result is open
};
