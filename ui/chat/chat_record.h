#pragma once
// A chat as the UI keeps it and the database saves it: its messages (with each reply's
// metrics), the system prompt it overrides the shared one with, and where it was forked from.

#include <QString>
#include <QVector>

#include <algorithm>

#include "ui/chat/chat_types.h"
#include "ui/chat/reply_metrics.h"

struct MessageRecord {
  QString role;  // "user" or "assistant" (the system prompt is kept apart)
  QString content;
  ReplyMetrics metrics;  // replies only
};

struct ChatRecord {
  ChatId id = -1;
  QString title;
  ChatId parentId = -1;      // the chat this one was forked from; -1: none
  int forkedAtMessage = -1;  // 1-based: the parent's messages 1..k were copied
  bool overridesSystemPrompt = false;
  QString systemPrompt;      // used when overridesSystemPrompt
  QVector<MessageRecord> messages;
  // The chat outgrew the context and its oldest turns were dropped: messages before this one
  // are shown greyed, outside the model's view, and no longer sent.
  int firstInView = 0;
  ContextPolicy contextPolicy = ContextPolicy::appDefault;  // saved as its number

  // The messages the engine reads: the effective system prompt (none when empty: the
  // template's default applies), then the chat from the first message in view.
  ChatMessages engineMessages(const QString& sharedSystemPrompt) const {
    ChatMessages out;
    const QString system = overridesSystemPrompt ? systemPrompt : sharedSystemPrompt;
    if (!system.trimmed().isEmpty()) out.append({QStringLiteral("system"), system});
    for (int i = std::clamp(firstInView, 0, static_cast<int>(messages.size())); i < messages.size(); ++i)
      out.append({messages[i].role, messages[i].content});
    return out;
  }
};
