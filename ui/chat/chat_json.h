#pragma once
// A chat's messages as JSON, one shape for the two places that write them: the database's
// column of a message's other versions, and a chat's export file (ui/chat/chat_export.h). The
// keys are written to disk: never rename them.
//
// A message: {"role", "content", "tokens", "first_token_ms", "tokens_per_second", "finish",
// "versions": [tail, ...], "version"}, where a tail is an array of messages (a version of the
// conversation from that message on), so a message's versions nest as deep as the edits went.

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QVector>

#include "ui/chat/chat_record.h"

QJsonObject messageToJson(const MessageRecord& m);
// Messages of another role than "user" or "assistant" are dropped, and so are empty tails.
MessageRecord messageFromJson(const QJsonObject& o);
QJsonArray tailsToJson(const QVector<QVector<MessageRecord>>& tails);
QVector<QVector<MessageRecord>> tailsFromJson(const QJsonArray& tails);
