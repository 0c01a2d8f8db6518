#pragma once
// The chat shown, in the middle of the window: its transcript (or the compare columns of a turn
// with several samples), the message input, and the row under it (the compare controls, the
// chat's sampling, Copy, Regenerate, Stop, Send). It shows the session's chat and asks the
// ChatController for turns; the turn's state is the controller's. What the input holds is the
// chat's: switching chats keeps each one's draft (and the question it was editing) for it, and
// the drafts are saved (in the chat database, once typing pauses) for the next start.

#include <QHash>
#include <QTimer>
#include <QWidget>

#include "appcore/chat/chat_types.h"
#include "appcore/session/chat_controller.h"

class AppSession;
class ChatActionRow;
class ChatToolsButton;
class CompareView;
class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QSpinBox;
class QStackedWidget;
class QToolButton;
class TranscriptView;

class ChatPanel : public QWidget {
  Q_OBJECT
 public:
  // session must outlive the panel.
  explicit ChatPanel(AppSession& session, QWidget* parent = nullptr);

  ChatId chatShown() const { return m_current; }
  // Shows chat id: the input takes its draft, the one shown before keeps what was typed.
  void showChat(ChatId id);
  void forgetChat(ChatId id);  // deleted: its draft goes with it
  void saveDrafts();           // now (the app quits); otherwise once typing pauses
  void restoreDrafts();        // the saved drafts of the chats there are (after they are restored)
  void refresh();              // the chat shown, drawn again
  void refreshSoon();          // at most ~30 times a second: tokens arrive faster than a person reads
  void updateControls();       // which buttons a turn allows now
  // While a model loads, turns wait: the engine they would go to is about to be replaced.
  void setTurnsHeld(bool held);
  void setPlaceholder(const QString& text);
  void focusInput();
  // Text put in the input to edit and send (a fork at a question), selected.
  void offerText(const QString& text);
  void revealMessage(int message, const QStringList& words);
  void setVarySettings(bool on);
  bool canStartTurn() const;

 public slots:
  void send();
  void stop();  // also Esc while editing a question: the edit is dropped
  void regenerate();
  void copyLastReply();
  void pickSample(int sample);

 signals:
  void forkRequested(ChatId chat, int messageCount);
  void chatWanted(ChatId id);  // a context-full choice went on in another chat: show it
  void statusSaid(ChatId id, const QString& text);
  void compareColumnsRequested();
  void chatSamplingRequested();
  void toolServersRequested();  // the Tool servers dialog (mcp.json)

 protected:
  void changeEvent(QEvent* event) override;  // a new palette: our drawn icons again

 private:
  void connectTranscript();
  void countDraft();  // asks the engine side what the input's text counts
  void showDraftCount(ChatId id, const QString& draft, int draftTokens, int tokensWithDraft);
  void onContextChoice(const QString& choice);
  ChatActionRow* buildActionRow();
  void refreshIcons();
  // The settings of the next turn, from the samples box and "Vary settings"; columnTitles:
  // how each compare column samples.
  TurnSettings nextTurnSettings(QStringList& columnTitles) const;
  const ChatController::Chat* current() const { return m_chats.chat(m_current); }
  // Whether chat c's engine takes a turn now (its remote server, or the local model loaded and
  // not being replaced): what Send and the input follow, and what a turn checks.
  bool engineReady(const ChatController::Chat* c) const;

  AppSession& m_session;
  ChatController& m_chats;
  ChatId m_current = -1;
  int m_editing = -1;  // the sent question being edited in the input (a new version on Send); -1: none
  bool m_turnsHeld = false;
  // What the input held for each chat not shown (and the question it was editing, -1: none).
  struct Draft {
    QString text;
    int editing = -1;
  };
  QHash<ChatId, Draft> m_drafts;
  QTimer m_renderTimer;
  QTimer m_saveDraftsTimer;
  QTimer m_countDraftTimer;  // the draft's tokens, counted once typing pauses a moment

  QStackedWidget* m_stack = nullptr;
  TranscriptView* m_transcript = nullptr;
  CompareView* m_compare = nullptr;
  QPlainTextEdit* m_input = nullptr;
  QLabel* m_draftTokens = nullptr;  // under the input: what the message being typed counts
  ChatActionRow* m_actionRow = nullptr;
  QSpinBox* m_samples = nullptr;
  QCheckBox* m_varySettings = nullptr;
  QCheckBox* m_beamSearch = nullptr;
  QToolButton* m_chatSampling = nullptr;  // the chat's sampling: the app's defaults or its own
  ChatToolsButton* m_tools = nullptr;     // the chat's MCP servers, and a tool for the next reply
  QString m_forcedTool;                   // the tool the next reply of the chat shown must call ("": any)
  QToolButton* m_send = nullptr;
  QToolButton* m_stop = nullptr;
  QToolButton* m_regenerate = nullptr;
  QToolButton* m_copy = nullptr;
};
