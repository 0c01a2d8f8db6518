#pragma once
// Tool calling through a model's own chat format (OpenAI's `tools`): which format a model writes
// its calls in, read from its chat template's markers; the grammar that makes a reply a call
// (tool_choice required or a named function) or, in the generic format, a call or an answer;
// and the reply's text split back into content and calls.
//
//   kHermes   Hermes, Qwen 2.5/3 and the like:  <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//   kLlama3   Llama 3.1-3.3:                    {"name": ..., "parameters": {...}} (after <|python_tag|> or alone)
//   kMistral  Mistral, Mixtral, Nemo:           [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}]
//   kHarmony  gpt-oss:                          <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
//             (messages read by engine/chat/harmony.h; a forced call is begun by the prompt and
//             its arguments follow the grammar)
//   kGeneric  any other model, and templates that do not render tools: the tools and how to
//             answer go into the system message; the reply is a JSON object,
//             {"tool_calls": [{"name": ..., "arguments": {...}}]} or {"response": "..."}, always
//             enforced by the grammar (a small model that was never taught tools still answers
//             in a form that parses).

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_message.h"

namespace pagedchat {

enum class ToolFormat { kHermes, kLlama3, kMistral, kGeneric, kHarmony };

// The most calls a forced reply may make (parallel_tool_calls): enough for real use, and an end
// for a small model that would repeat one call until max_tokens.
inline constexpr int kMaxParallelCalls = 8;
const char* tool_format_name(ToolFormat f);
// The format a model whose chat template is `source` writes calls in; kGeneric when the
// template never looks at `tools` (it would not show them to the model).
ToolFormat tool_format_of(std::string_view source);

struct ToolChoice {
  enum class Mode { kAuto, kRequired, kNamed };
  Mode mode = Mode::kAuto;
  std::string name;       // kNamed: the function
  bool parallel = true;   // parallel_tool_calls: more than one call in a reply
};

// The tools a request offers (OpenAI's `tools` array), checked.
class ToolSet {
 public:
  struct Function {
    std::string name, description;
    std::string parameters;  // a JSON schema's text ({"type": "object", "properties": {}} when none was given)
  };
  // Throws Error naming the entry at fault ("tools[1].function.name must be ...").
  explicit ToolSet(std::string_view tools_json);

  const std::string& json() const { return json_; }  // the array, compact, members in the client's order
  const std::vector<Function>& functions() const { return functions_; }
  bool has(std::string_view name) const;

  // The grammar a reply must follow (GBNF, and its start rule), or an empty one for free text
  // (auto in a model's own format). Throws Error when a function's parameters use a schema
  // keyword outside the subset (engine/grammar/json_schema.h), naming the function.
  struct Grammar {
    std::string gbnf;
    std::string root = "root";
  };
  Grammar grammar(ToolFormat format, const ToolChoice& choice) const;
  // Text the reply is begun with when the call is forced (Mistral's [TOOL_CALLS], harmony's
  // call header: control tokens the grammar cannot write); "" otherwise.
  static std::string forced_prefix(ToolFormat format, const ToolChoice& choice);
  // The generic format's instructions for the system message.
  std::string generic_instructions() const;

 private:
  std::string json_;
  std::vector<Function> functions_;
};

// A call's id: "call_" and 24 letters and digits, as OpenAI's; Mistral's templates insist on 9.
// draw(n): a uniformly drawn number below n.
template <class Draw>
std::string make_call_id(ToolFormat format, Draw&& draw) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bool mistral = format == ToolFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlnum[draw(62u)];
  return id;
}

struct ToolReply {
  std::string content;          // what the reply says outside its calls (trimmed)
  std::vector<ToolCall> calls;  // ids as the model wrote them (usually none: the server makes them)
  // The reply began a call that does not parse (cut by its length, or written wrong): its text
  // stays in content, but it was meant as a call, not an answer.
  bool broken_call = false;
};
// The whole reply's text (special tokens written out) split into content and calls. Text that
// looks like a call but does not parse stays content.
ToolReply parse_tool_reply(ToolFormat format, std::string_view text);
// How much of a reply streamed so far is content whatever comes next: up to where a call
// begins or may be beginning (0 in the generic format, whose reply is one JSON object).
size_t settled_content(ToolFormat format, std::string_view text);
// What a reply streamed so far shows a reader: its settled content in a model's own format; in
// the generic one, whose reply is one JSON object, the {"response": "..."} string decoded as
// far as it has come (escapes and characters cut at the end held back), and nothing while the
// reply may be a call. It only grows as the reply does, and is a prefix of parse_tool_reply's
// content for a reply that answers (but for the trim at its end).
std::string streamed_content(ToolFormat format, std::string_view text);

// A conversation with tools for a template that does not render them: the instructions in the
// (first) system message, earlier calls and answers written as the reply format has them, and
// tool results as user messages holding {"tool_response": ...}.
std::vector<ChatMessage> generic_tool_messages(const std::vector<ChatMessage>& messages, const ToolSet& tools);

}  // namespace pagedchat
