#pragma once
// What the Model Context Protocol client (mcp_client.h) deals in: a server's tools, a call's
// result, the limits every message is held to, and a failure as a sentence.

#include <cstddef>
#include <string>
#include <vector>

namespace pagedchat::mcp {

// Bounds on what a server may send: a hostile or broken server costs a clear error, never the
// app's memory or a hang.
struct Limits {
  size_t max_message_bytes = size_t{16} << 20;  // one JSON-RPC message
  int max_depth = 64;                           // nesting of arrays and objects in a message
  int max_tools = 512;                          // tools across every page of tools/list
  int max_pages = 64;                           // pages of tools/list
  size_t max_result_bytes = size_t{1} << 20;    // a call's text kept for the chat; the rest is cut and said
  int max_content_items = 256;                  // content blocks of one result
  double start_timeout_s = 20;                  // the child's start and initialize
  double request_timeout_s = 30;                // tools/list, ping
  double call_timeout_s = 120;                  // tools/call, unless the caller gives its own
};

struct Tool {
  std::string name;
  std::string title;         // for people; may be empty
  std::string description;
  std::string input_schema;  // its JSON schema, compact ({"type":"object"} when the server gave none)
};

struct ServerInfo {
  std::string name, version;
  std::string protocol_version;  // the one the server chose
  bool tools_list_changed = false;  // it says when its tools change (notifications/tools/list_changed)
  std::string instructions;
};

struct ToolResult {
  bool is_error = false;           // the tool ran and failed (isError): the model is told so
  std::string text;                // the content blocks as text, in order (images and audio named, not inlined)
  std::string structured;          // structuredContent as compact JSON, when given
  size_t full_bytes = 0;           // the text's size before the cut
  bool truncated = false;          // cut to Limits::max_result_bytes (the text ends saying so)
};

enum class ErrorKind {
  none,
  spawn_failed,    // the command could not be started
  exited,          // the server's process ended (or closed its output)
  timeout,         // no answer in time
  cancelled,       // the caller stopped the call
  protocol,        // junk, an oversized or too-deep message, a reply that breaks the protocol
  server_error,    // a JSON-RPC error the server returned
  http,            // Streamable HTTP: connection or status failure
};

struct Error {
  ErrorKind kind = ErrorKind::none;
  std::string sentence;  // what the user reads, naming the server
  bool ok() const { return kind == ErrorKind::none; }
};

}  // namespace pagedchat::mcp
