#pragma once
// A chat's messages as JSON, one shape for the two places that write them: the database's
// column of a message's other versions, and a chat's export file (appcore/chat/chat_export.h). The
// keys are written to disk: never rename them.
//
// Sampling settings (a chat's own, or those an export was made under): {"temperature", "top_p",
// "top_k", "min_p", "repetition_penalty", "frequency_penalty", "presence_penalty", "max_tokens",
// "seed"}, the seed a string (JSON numbers are doubles; a seed is 64 bits).
//
// A message: {"role", "content", "tokens", "first_token_ms", "tokens_per_second", "finish",
// "versions": [tail, ...], "version"}, where a tail is an array of messages (a version of the
// conversation from that message on), so a message's versions nest as deep as the edits went.
// A reply that called tools adds "tool_calls": [{"id", "name", "arguments"}], and a tool
// message ("role": "tool") "tool_call_id" and "name", as OpenAI's messages have them.

#include <optional>

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QVector>

#include "appcore/chat/chat_record.h"

QJsonObject messageToJson(const MessageRecord& m);
// Messages of another role than "user", "assistant" or "tool" are dropped, and so are empty tails.
MessageRecord messageFromJson(const QJsonObject& o);
// A message's tool fields alone ({} when it has none): the database keeps them in a column.
QJsonObject toolFieldsToJson(const MessageRecord& m);
void toolFieldsFromJson(const QJsonObject& o, MessageRecord* m);
QJsonArray tailsToJson(const QVector<QVector<MessageRecord>>& tails);
QVector<QVector<MessageRecord>> tailsFromJson(const QJsonArray& tails);

// A chat's tools: {"servers": [names], "max_calls": n}.
QJsonObject chatToolsToJson(const ChatTools& t);
// Absent keys keep the defaults; a server that is not a string, or a max_calls outside 1-100,
// is left out / the default (a file edited by hand never stops a chat from loading).
ChatTools chatToolsFromJson(const QJsonObject& o);

QJsonObject samplingToJson(const TurnSettings& s);
// Keys that are absent keep TurnSettings' defaults; nullopt, with `error` set to a sentence, when
// a value is not a number or lies outside what the settings allow.
std::optional<TurnSettings> samplingFromJson(const QJsonObject& o, QString* error = nullptr);
