#pragma once
// A chat written out for people (Markdown) and for another PagedChat (JSON, read back by
// chatFromJson): its messages with their versions and metrics, its system prompt and context
// policy, and its sampling settings ("own_sampling": its own, else the app's it was exported
// under; an import keeps them only when they were its own). The JSON's keys are a file format:
// never rename them; a later version adds keys and bumps kChatExportVersion.

#include <QByteArray>
#include <QString>

#include <optional>

#include "appcore/chat/chat_record.h"
#include "appcore/chat/chat_types.h"

inline constexpr int kChatExportVersion = 1;
inline constexpr qint64 kMaxChatImportBytes = qint64{64} << 20;  // a bigger file is refused unread

// sharedSystemPrompt and sampling: the app's, which the chat uses unless it has its own.
QString chatToMarkdown(const ChatRecord& chat, const QString& sharedSystemPrompt);
QByteArray chatToJson(const ChatRecord& chat, const QString& sharedSystemPrompt, const TurnSettings& sampling);

// The chat of an export (its id, fork parent and pin are not kept: an import is a chat of its
// own). nullopt with *error one sentence saying what is wrong with the file.
std::optional<ChatRecord> chatFromJson(const QByteArray& json, QString* error);

// The files of File > Export and Import. A path ending .md or .markdown gets Markdown, any
// other JSON; written whole or not at all (the file as it was on failure). false / nullopt
// with *error saying why (the system's words for a file that cannot be written or read).
bool writeChatFile(const QString& path, const ChatRecord& chat, const QString& sharedSystemPrompt, const TurnSettings& sampling,
                   QString* error);
std::optional<ChatRecord> readChatFile(const QString& path, QString* error);
