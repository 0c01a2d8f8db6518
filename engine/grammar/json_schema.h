#pragma once
// JSON Schema to a grammar whose sentences are JSON texts the schema validates: what
// `response_format: {"type": "json_schema", ...}` will enforce. The subset vLLM and llama.cpp
// document: type (one or a list), properties with required (in the schema's order; members
// not listed are not written, which the schema allows), additionalProperties (false, or a
// schema for a map), enum, const, items with minItems and maxItems, anyOf and oneOf (either
// branch), $ref into $defs or definitions, minLength and maxLength, and annotations (title,
// description, default, examples, $schema, $id, $comment). Anything else is refused with an
// Error naming the keyword and where it is, never ignored: a pattern, a format, minimum...
//
// Whitespace between tokens is a space, or a line break and up to 20 spaces or tabs (as
// llama.cpp allows it), so a model cannot pad a document for ever; numbers likewise have at
// most 16 digits before the point (as llama.cpp's), 16 after it and 3 in the exponent (more
// than a double holds): with every string given a maxLength and every array a maxItems, a
// schema's documents are bounded, and a reply always ends whole.

#include <string>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace pagedchat::grammar {

// kCompact: no whitespace between tokens at all, as nlohmann's dump() writes JSON (the generic
// tool format's replies, written back into later prompts the same way).
enum class JsonLayout { kFree, kCompact };

// The schema's grammar as GBNF text (for messages, and for those who want to see it).
std::string json_schema_to_gbnf(std::string_view schema_json, JsonLayout layout = JsonLayout::kFree);
Grammar json_schema_grammar(std::string_view schema_json);

// Any JSON text (`response_format: {"type": "json_object"}` asks for an object: object_only).
std::string json_gbnf(bool object_only);

}  // namespace pagedchat::grammar
