#pragma once
// The structured-output fields of a completion request, turned into the grammar the engine
// enforces (SamplingParams::grammar). What clients send, by the server they were written for:
//   response_format: {"type": "text"}                                   OpenAI: no constraint
//                    {"type": "json_object"}                            OpenAI: any JSON object
//                    {"type": "json_object", "schema": {...}}           llama.cpp: that schema
//                    {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}  OpenAI
//   json_schema: {...}      llama.cpp's server: a schema
//   grammar: "root ::= ..." llama.cpp's server: GBNF
//   guided_json: {...} or its text, guided_choice: ["a", "b"], guided_grammar: GBNF   vLLM's
// At most one of them; a schema keyword outside the supported subset, a GBNF error, or vLLM's
// guided_regex is a 400 naming the field and what is wrong (never a constraint silently dropped).
// Schemas are read from the raw body so that their properties keep the client's order (the
// order the reply writes them in). Grammars are kept by their text (grammar_cache.h), so requests
// with one schema share its masks.

#include <QByteArray>
#include <QJsonObject>

#include <memory>

#include "engine/grammar/grammar.h"

// Null when the request asks for no constraint. Throws ApiError.
std::shared_ptr<const pagedchat::grammar::Grammar> parseStructuredOutput(const QJsonObject& request, const QByteArray& body);
