#pragma once
// One chat's messages as the user reads them: who said what, code blocks in a monospace box,
// and under each reply its tokens, tokens/s and time to first token. Each message carries
// links to fork the chat there or copy the message.

#include <QTextBrowser>

#include "ui/chat_record.h"

class TranscriptView : public QTextBrowser {
  Q_OBJECT
 public:
  explicit TranscriptView(QWidget* parent = nullptr);
  void showChat(const ChatRecord& chat, bool replying);

  // The HTML of one message body: paragraphs, and ``` fenced code in a monospace box.
  static QString messageHtml(const QString& text);

 signals:
  void forkRequested(int messageCount);  // fork keeping messages 1..messageCount
  void copyRequested(int messageIndex);
};
