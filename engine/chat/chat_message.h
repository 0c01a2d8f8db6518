#pragma once
// One message of a chat, as clients of the OpenAI API send it: a role and its text, and for
// tool use, the calls an assistant turn made and the call a tool message answers; a reply's
// thinking, for the templates that read it back (gpt-oss's `thinking`).

#include <string>
#include <vector>

namespace pagedchat {

// A function call a reply made (engine/chat/tool_calls.h reads them out of the reply's text).
struct ToolCall {
  std::string id;         // the call's id ("call_..."): a tool message names it to answer
  std::string name;
  std::string arguments;  // a JSON object, as text
  bool operator==(const ToolCall&) const = default;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls = {};  // an assistant turn's calls
  std::string tool_call_id = {};          // a tool message: the call it answers
  std::string name = {};                  // a tool message: the function's name, when given
  std::string reasoning = {};             // a reply's thinking (the API's reasoning_content), apart from content
  bool operator==(const ChatMessage&) const = default;
};

}  // namespace pagedchat
