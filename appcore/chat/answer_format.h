#pragma once
// How a chat's replies are written: free text, any JSON object, or the documents of a JSON schema
// (TurnSettings::answerFormat, a chat's own sampling setting). The JSON ones are enforced token
// by token (engine/grammar: the reply always parses, and validates when a schema is given).

#include <QString>

#include <memory>

namespace pagedchat::grammar {
struct Grammar;
}

// "": free text; kAnswerJsonObject: any JSON object; else the text of a JSON schema.
inline const QString kAnswerJsonObject = QStringLiteral("json");

// The grammar replies follow (null for free text). Throws pagedchat::Error naming what is wrong
// with a schema (not JSON, a keyword outside the subset). Kept by text: a chat's turns share it.
std::shared_ptr<const pagedchat::grammar::Grammar> answerGrammar(const QString& format);
// What is wrong with a format, for the form that edits it; empty when it is fine.
QString answerFormatProblem(const QString& format);
// "JSON", "JSON (schema)" or "" for the line that sums up a chat's settings.
QString describeAnswerFormat(const QString& format);
