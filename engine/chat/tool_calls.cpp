// Tool calls: formats, grammars, parsing (see tool_calls.h).
#include "engine/chat/tool_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "engine/common/error.h"
#include "engine/chat/harmony.h"
#include "engine/chat/text_markers.h"
#include "engine/grammar/json_schema.h"
#include "engine/tokenizer/utf8.h"

namespace pagedchat {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>", kMistralCalls = "[TOOL_CALLS]";

std::string trimmed(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return {};
  const size_t b = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(a, b - a + 1));
}

// Leading whitespace off (parse_tool_reply trims the content; its start is settled as it streams).
std::string trimmed_front(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  return a == std::string_view::npos ? std::string() : std::string(s.substr(a));
}

bool valid_name(const std::string& n) {
  return !n.empty() && n.size() <= 64 &&
         std::all_of(n.begin(), n.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; });
}

// A call read from a JSON object {"name": ..., "arguments" (or "parameters"): {...} or its text}.
bool call_of(const Json& j, ToolCall& call) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  call.name = j["name"].get<std::string>();
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  if (!key) call.arguments = "{}";
  else if (j[key].is_object()) call.arguments = j[key].dump();
  else if (j[key].is_string()) {
    const Json inner = Json::parse(j[key].get<std::string>(), nullptr, false);
    if (!inner.is_object()) return false;
    call.arguments = inner.dump();
  } else return false;
  if (j.contains("id") && j["id"].is_string()) call.id = j["id"].get<std::string>();
  return true;
}

// A function's parameters as its calls' grammar reads them. A function that declares no
// parameters (no properties, additionalProperties unsaid) is called with {}: read as JSON Schema
// says, its arguments would be any object, and a small model fills one without end (SmolLM2 nests
// {"name": ..., "arguments": {...}} into it until max_tokens). As OpenAI's strict mode and
// XGrammar's default read such an object. Declared properties already close an object here
// (engine/grammar/json_schema.h writes no member it does not list).
Json arguments_schema(const std::string& parameters) {
  Json schema = Json::parse(parameters);  // an object: the constructor checked it
  if (schema.empty()) schema["type"] = "object";  // "parameters": {} says none too
  const Json properties = schema.value("properties", Json::object());
  if (schema.value("type", Json()) == "object" && properties == Json::object() && !schema.contains("additionalProperties"))
    schema["additionalProperties"] = false;
  return schema;
}

}  // namespace

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::kHermes: return "hermes";
    case ToolFormat::kLlama3: return "llama3";
    case ToolFormat::kMistral: return "mistral";
    case ToolFormat::kGeneric: return "generic";
    case ToolFormat::kHarmony: return "harmony";
  }
  return "?";
}

ToolFormat tool_format_of(std::string_view source) {
  if (source.find("tools") == std::string_view::npos) return ToolFormat::kGeneric;
  if (template_is_harmony(source)) return ToolFormat::kHarmony;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolFormat::kHermes;
  if (source.find(kMistralCalls) != std::string_view::npos) return ToolFormat::kMistral;
  if (source.find(kPythonTag) != std::string_view::npos || source.find("<|start_header_id|>ipython") != std::string_view::npos ||
      (source.find("<|start_header_id|>") != std::string_view::npos && source.find("\"parameters\"") != std::string_view::npos))
    return ToolFormat::kLlama3;
  return ToolFormat::kGeneric;
}

ToolSet::ToolSet(std::string_view tools_json) {
  const Json tools = Json::parse(tools_json, nullptr, false);
  if (!tools.is_array()) throw Error("tools must be an array of {\"type\": \"function\", \"function\": {...}}");
  if (tools.size() > 128) throw Error("tools has more than 128 entries");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const Json& t = tools[i];
    if (!t.is_object()) throw Error(at + " must be an object");
    if (t.contains("type") && t["type"] != "function") throw Error(at + ".type must be \"function\" (the only kind of tool)");
    if (!t.contains("function") || !t["function"].is_object()) throw Error(at + ".function must be an object with a name");
    const Json& f = t["function"];
    Function fn;
    if (!f.contains("name") || !f["name"].is_string() || !valid_name(fn.name = f["name"].get<std::string>()))
      throw Error(at + ".function.name must be 1 to 64 letters, digits, '_', '-' or '.'");
    if (has(fn.name)) throw Error(at + ".function.name '" + fn.name + "' is given twice");
    if (f.contains("description") && !f["description"].is_null()) {
      if (!f["description"].is_string()) throw Error(at + ".function.description must be a string");
      fn.description = f["description"].get<std::string>();
    }
    if (f.contains("parameters") && !f["parameters"].is_null()) {
      if (!f["parameters"].is_object()) throw Error(at + ".function.parameters must be a JSON schema (an object)");
      fn.parameters = f["parameters"].dump();
    } else {
      fn.parameters = R"({"type":"object","properties":{}})";
    }
    if (f.contains("strict") && !f["strict"].is_null() && !f["strict"].is_boolean()) throw Error(at + ".function.strict must be a boolean");
    functions_.push_back(std::move(fn));
  }
  if (functions_.empty()) throw Error("tools must not be empty");
  json_ = tools.dump();
}

bool ToolSet::has(std::string_view name) const {
  return std::any_of(functions_.begin(), functions_.end(), [&](const Function& f) { return f.name == name; });
}

ToolSet::Grammar ToolSet::grammar(ToolFormat format, const ToolChoice& choice) const {
  const bool forced = choice.mode != ToolChoice::Mode::kAuto;
  if (!forced && format != ToolFormat::kGeneric) return {};
  if (format == ToolFormat::kHarmony) {
    // The call's header names the function (forced_prefix, markup the grammar cannot write), so
    // only a named one can be forced: the grammar is its arguments' schema.
    if (choice.mode != ToolChoice::Mode::kNamed)
      throw Error("tool_choice \"required\" is not supported for gpt-oss's harmony format: name the function "
                  "({\"type\": \"function\", \"function\": {\"name\": ...}})");
    for (const Function& f : functions_) {
      if (f.name != choice.name) continue;
      try {
        return {grammar::json_schema_to_gbnf(arguments_schema(f.parameters).dump())};
      } catch (const Error& e) {
        throw Error("the parameters of tool '" + f.name + "': " + e.what());
      }
    }
    throw Error("tool_choice names '" + choice.name + "', which is not among the tools");
  }
  // One call as a schema: the function's name as a constant, its parameters' schema.
  const char* args_key = format == ToolFormat::kLlama3 ? "parameters" : "arguments";
  Json calls = Json::array();
  for (const Function& f : functions_) {
    if (choice.mode == ToolChoice::Mode::kNamed && f.name != choice.name) continue;
    Json call = {{"type", "object"},
                 {"properties", {{"name", {{"const", f.name}}}, {args_key, arguments_schema(f.parameters)}}},
                 {"required", {"name", args_key}},
                 {"additionalProperties", false}};
    // Checked one by one, so that an error names its function.
    try {
      grammar::json_schema_to_gbnf(call.dump());
    } catch (const Error& e) {
      throw Error("the parameters of tool '" + f.name + "': " + e.what());
    }
    calls.push_back(std::move(call));
  }
  if (calls.empty()) throw Error("tool_choice names '" + choice.name + "', which is not among the tools");
  const Json one_call = calls.size() == 1 ? calls[0] : Json{{"anyOf", calls}};
  // Parallel calls are capped: a small model that repeats its call would otherwise repeat it
  // until max_tokens, and its reply would never parse.
  Json list = {{"type", "array"}, {"items", one_call}, {"minItems", 1}, {"maxItems", choice.parallel ? kMaxParallelCalls : 1}};
  switch (format) {
    case ToolFormat::kGeneric: {
      Json envelope = {{"type", "object"}, {"properties", {{"tool_calls", list}}}, {"required", {"tool_calls"}}, {"additionalProperties", false}};
      if (!forced) {
        const Json answer = {{"type", "object"}, {"properties", {{"response", {{"type", "string"}}}}}, {"required", {"response"}},
                             {"additionalProperties", false}};
        envelope = Json{{"anyOf", {envelope, answer}}};
      }
      // Compact, as the reply is written back into later prompts (generic_tool_messages: dump()),
      // so a chat's held text reads the same and its next turn appends to it.
      return {grammar::json_schema_to_gbnf(envelope.dump(), grammar::JsonLayout::kCompact)};
    }
    case ToolFormat::kMistral: return {grammar::json_schema_to_gbnf(list.dump())};  // after the forced [TOOL_CALLS]
    case ToolFormat::kLlama3: return {grammar::json_schema_to_gbnf(one_call.dump())};  // one call a reply
    case ToolFormat::kHermes: {
      // The schema's grammar under a root of our own: calls in their tags, one per line.
      std::string g = grammar::json_schema_to_gbnf(one_call.dump());
      g += "tool-reply ::= tool-tagged";
      if (choice.parallel) g += " ( \"\\n\" tool-tagged ){0," + std::to_string(kMaxParallelCalls - 1) + "}";
      g += "\ntool-tagged ::= \"<tool_call>\\n\" root \"\\n</tool_call>\"\n";
      return {g, "tool-reply"};
    }
  }
  return {};
}

std::string ToolSet::forced_prefix(ToolFormat format, const ToolChoice& choice) {
  if (format == ToolFormat::kHarmony)  // after the generation prompt's "<|start|>assistant"
    return choice.mode == ToolChoice::Mode::kNamed ? "<|channel|>commentary to=functions." + choice.name + " <|constrain|>json<|message|>"
                                                   : std::string();
  return format == ToolFormat::kMistral && choice.mode != ToolChoice::Mode::kAuto ? std::string(kMistralCalls) : std::string();
}

std::string ToolSet::generic_instructions() const {
  std::string out = "You can call these tools (functions):\n";
  for (const Function& f : functions_) {
    Json line = {{"name", f.name}};
    if (!f.description.empty()) line["description"] = f.description;
    line["parameters"] = Json::parse(f.parameters);
    out += line.dump() + "\n";
  }
  // The same whatever the turn's tool_choice (the grammar enforces a forced call), so that a
  // chat's system message, and the KV blocks of its prompt, stay the same from turn to turn.
  out += "\nTo call tools, reply with only a JSON object: {\"tool_calls\":[{\"name\":\"<tool name>\",\"arguments\":{<its arguments>}}]}.";
  out += " To answer without a tool, reply with only {\"response\":\"<your answer>\"}.";
  out += " Results of calls come back as {\"tool_response\": ...}.";
  return out;
}

ToolReply parse_tool_reply(ToolFormat format, std::string_view text) {
  ToolReply out;
  switch (format) {
    case ToolFormat::kHermes: {
      std::string content;
      size_t pos = 0;
      for (;;) {
        const size_t open = text.find(kHermesOpen, pos);
        if (open == std::string_view::npos) {
          content += text.substr(pos);
          break;
        }
        const size_t body = open + kHermesOpen.size();
        const size_t close = text.find(kHermesClose, body);
        const size_t end = close == std::string_view::npos ? text.size() : close + kHermesClose.size();
        ToolCall call;
        const Json j = Json::parse(text.substr(body, (close == std::string_view::npos ? text.size() : close) - body), nullptr, false);
        if (call_of(j, call)) {
          content += text.substr(pos, open - pos);
          out.calls.push_back(std::move(call));
        } else {
          content += text.substr(pos, end - pos);  // not a call after all
          out.broken_call = true;
        }
        pos = end;
      }
      out.content = trimmed(content);
      return out;
    }
    case ToolFormat::kLlama3: {
      std::string_view rest = text;
      const size_t tag = rest.find(kPythonTag);
      std::string before;
      if (tag != std::string_view::npos) {
        before = std::string(rest.substr(0, tag));
        rest = rest.substr(tag + kPythonTag.size());
      }
      ToolCall call;
      const Json j = Json::parse(trimmed(rest), nullptr, false);
      if (call_of(j, call)) {
        out.calls.push_back(std::move(call));
        out.content = trimmed(before);
      } else {
        out.content = trimmed(text);
        out.broken_call = settled_content(format, text) < text.size();  // it looked like a call
      }
      return out;
    }
    case ToolFormat::kMistral: {
      const size_t marker = text.find(kMistralCalls);
      const std::string_view calls = marker == std::string_view::npos ? text : text.substr(marker + kMistralCalls.size());
      const Json j = Json::parse(trimmed(calls), nullptr, false);
      bool all = j.is_array() && !j.empty();
      std::vector<ToolCall> found;
      for (size_t i = 0; all && i < j.size(); ++i) {
        ToolCall call;
        all = call_of(j[i], call);
        found.push_back(std::move(call));
      }
      if (all) {
        out.calls = std::move(found);
        out.content = marker == std::string_view::npos ? std::string() : trimmed(text.substr(0, marker));
      } else {
        out.content = trimmed(text);
        out.broken_call = marker != std::string_view::npos;
      }
      return out;
    }
    case ToolFormat::kHarmony: {
      // Read by harmony's messages: the answer's channels are the content (the thinking is the
      // caller's, from the same reader), each message to a recipient a call.
      HarmonySplitter reader;
      ReasoningDelta d = reader.push(text);
      const ReasoningDelta rest = reader.finish();
      out.content = trimmed(d.content + rest.content);
      for (const HarmonySplitter::Call& c : reader.calls()) {
        ToolCall call;
        call.name = c.recipient.starts_with("functions.") ? c.recipient.substr(10) : c.recipient;
        const Json args = Json::parse(c.body, nullptr, false);
        if (!args.is_object() || !valid_name(call.name)) {
          out.broken_call = true;  // cut by its length, or written wrong
          continue;
        }
        call.arguments = args.dump();
        out.calls.push_back(std::move(call));
      }
      return out;
    }
    case ToolFormat::kGeneric: {
      const Json j = Json::parse(text, nullptr, false);
      if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) {
        for (const Json& c : j["tool_calls"]) {
          ToolCall call;
          if (call_of(c, call)) out.calls.push_back(std::move(call));
        }
        if (!out.calls.empty()) return out;
      }
      if (j.is_object() && j.contains("response") && j["response"].is_string()) {
        out.content = j["response"].get<std::string>();
        return out;
      }
      // The grammar keeps a whole reply one of the two objects: this one was cut. An answer cut
      // short is what it said so far; a call cut short is a broken call.
      const size_t open = text.find_first_not_of(" \t\r\n");
      const size_t key = open == std::string_view::npos ? open : text.find_first_not_of(" \t\r\n", open + 1);
      if (key != std::string_view::npos && text[open] == '{' && text.substr(key).starts_with("\"response\"")) {
        out.content = streamed_content(format, text);
        return out;
      }
      out.content = trimmed(text);
      out.broken_call = !out.content.empty();
      return out;
    }
  }
  return out;
}

size_t settled_content(ToolFormat format, std::string_view text) {
  switch (format) {
    case ToolFormat::kHermes: {
      const size_t open = text.find(kHermesOpen);
      return open != std::string_view::npos ? open : text.size() - partial_marker(text, kHermesOpen);
    }
    case ToolFormat::kMistral: {
      const size_t marker = text.find(kMistralCalls);
      return marker != std::string_view::npos ? marker : text.size() - partial_marker(text, kMistralCalls);
    }
    case ToolFormat::kLlama3: {
      // A call is the whole reply: while it may still be one, nothing is settled.
      const std::string t = trimmed(text);
      if (t.empty() || t[0] == '{' || kPythonTag.starts_with(t.substr(0, kPythonTag.size())) || t.starts_with(kPythonTag)) return 0;
      return text.size();
    }
    case ToolFormat::kGeneric: return 0;
    case ToolFormat::kHarmony: return text.size();  // its calls are messages apart: the reader never gives them as content
  }
  return 0;
}

namespace {

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at s[i..i+4): their value, or -1 when they are not all there.
int hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    const int d = hex_value(s[k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The JSON string's body from s[i] on, decoded up to its closing quote or as far as it is
// whole (an escape cut at the end is held back).
std::string decode_json_string_prefix(std::string_view s, size_t i) {
  std::string out;
  while (i < s.size() && s[i] != '"') {
    if (s[i] != '\\') {
      out += s[i++];
      continue;
    }
    if (i + 1 >= s.size()) break;
    const char e = s[i + 1];
    if (e != 'u') {
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        default: out += e;  // \" \\ \/
      }
      i += 2;
      continue;
    }
    const int hi = hex4(s, i + 2);
    if (hi < 0) break;
    if (hi >= 0xD800 && hi <= 0xDBFF) {
      // A surrogate pair: both halves, or wait for the second.
      if (i + 12 > s.size() || s[i + 6] != '\\' || s[i + 7] != 'u') break;
      const int lo = hex4(s, i + 8);
      if (lo < 0) break;
      append_utf8(out, 0x10000 + ((static_cast<uint32_t>(hi) - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00));
      i += 12;
      continue;
    }
    append_utf8(out, static_cast<uint32_t>(hi));
    i += 6;
  }
  // A character whose bytes the model writes in several tokens is held back until whole.
  out.resize(whole_utf8_prefix(out));
  return out;
}

}  // namespace

std::string streamed_content(ToolFormat format, std::string_view text) {
  if (format != ToolFormat::kGeneric) return trimmed_front(text.substr(0, settled_content(format, text)));
  // {"response": "...  with any whitespace the grammar allows between the parts.
  size_t i = skip_space(text, 0);
  if (i >= text.size() || text[i] != '{') return {};
  i = skip_space(text, i + 1);
  constexpr std::string_view kKey = "\"response\"";
  if (text.substr(i, kKey.size()) != kKey) return {};
  i = skip_space(text, i + kKey.size());
  if (i >= text.size() || text[i] != ':') return {};
  i = skip_space(text, i + 1);
  if (i >= text.size() || text[i] != '"') return {};
  return decode_json_string_prefix(text, i + 1);
}

std::vector<ChatMessage> generic_tool_messages(const std::vector<ChatMessage>& messages, const ToolSet& tools) {
  std::vector<ChatMessage> out;
  const std::string instructions = tools.generic_instructions();
  bool placed = false;
  for (const ChatMessage& m : messages) {
    ChatMessage r{m.role, m.content};
    if (m.role == "system" && !placed) {
      r.content = m.content.empty() ? instructions : m.content + "\n\n" + instructions;
      placed = true;
    } else if (m.role == "assistant") {
      Json reply;
      if (!m.tool_calls.empty()) {
        Json calls = Json::array();
        for (const ToolCall& c : m.tool_calls) {
          const Json args = Json::parse(c.arguments, nullptr, false);
          calls.push_back({{"name", c.name}, {"arguments", args.is_discarded() ? Json(c.arguments) : args}});
        }
        reply = {{"tool_calls", calls}};
      } else {
        reply = {{"response", m.content}};
      }
      r.content = reply.dump();
    } else if (m.role == "tool") {
      Json response = {{"id", m.tool_call_id}};
      if (!m.name.empty()) response["name"] = m.name;
      response["content"] = m.content;
      r = ChatMessage{"user", Json{{"tool_response", response}}.dump()};
    }
    out.push_back(std::move(r));
  }
  if (!placed) out.insert(out.begin(), ChatMessage{"system", instructions});
  return out;
}

}  // namespace pagedchat
