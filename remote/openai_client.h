#pragma once
// Chats on a remote OpenAI-compatible server (a vLLM deployment, llama.cpp's llama-server,
// another PagedChat): its models (GET /v1/models) and a chat completion streamed as server-sent
// events (POST /v1/chat/completions, stream: true), over libcurl. Blocking: the CLI calls it on
// its own thread, the app on a worker thread; Stop is an atomic flag the transfer checks, which
// closes the connection (the server then aborts the request). A failure is a RemoteError with a
// sentence a user can act on, never an exception: what arrived before it is kept.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagedchat::remote {

struct Endpoint {
  std::string base_url;  // "http://host:port" or "http://host:port/v1"; /v1 is added when missing
  std::string api_key;   // sent as "Authorization: Bearer KEY" when not empty
  long connect_timeout_s = 10;
  long stall_timeout_s = 120;  // a response that sends no byte for this long is given up
};

enum class RemoteErrorKind {
  none,
  stopped,       // the caller's stop flag
  refused,       // nothing listens there
  unreachable,   // the name does not resolve, no route
  timeout,       // connected, then nothing for stall_timeout_s
  unauthorized,  // 401: no key or a wrong one
  forbidden,     // 403
  not_found,     // 404: no such route or model
  rate_limited,  // 429
  bad_request,   // another 4xx: the server's message says why
  server_error,  // 5xx, or an error event inside the stream
  stream_cut,    // the connection closed before the reply ended
  bad_response,  // not an OpenAI-compatible reply
};

struct RemoteError {
  RemoteErrorKind kind = RemoteErrorKind::none;
  int http_status = 0;
  std::string server_message;  // the server's own error.message, when it sent one
  int retry_after_s = -1;      // 429: its Retry-After header
  std::string detail;          // libcurl's words, for a network failure
  std::string url;
  bool ok() const { return kind == RemoteErrorKind::none; }
  std::string sentence() const;  // what the user reads in the chat
};

// A function call a reply made (OpenAI's tool_calls), as the server wrote it.
struct RemoteToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON object's text
  bool operator==(const RemoteToolCall&) const = default;
};

struct RemoteMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  std::vector<RemoteToolCall> tool_calls = {};  // an assistant message's calls
  std::string tool_call_id = {};                // a tool message: the call it answers
};

struct RemoteChatRequest {
  std::string model;  // empty: the server's first listed model
  std::vector<RemoteMessage> messages;
  int max_tokens = 256;
  double temperature = 0.0;
  double top_p = 1.0;
  std::optional<uint64_t> seed;
  int n = 1;  // samples; a server without n sends one choice
  std::vector<std::string> stop;
  double frequency_penalty = 0.0;  // OpenAI's; sent when not 0
  double presence_penalty = 0.0;
  // n beams instead of n samples ("use_beam_search", which vLLM and pagedchat-server take;
  // a server that ignores it answers n samples, or one).
  bool beam_search = false;
  // response_format: empty, none; "json" {"type": "json_object"}; else a JSON schema's text
  // ({"type": "json_schema", ...}), which the server enforces (or refuses).
  std::string answer_format;
  // The user's tools (an OpenAI tools array's text; empty: none), and the function the reply
  // must call (tool_choice; empty: "auto").
  std::string tools;
  std::string tool_choice;
};

struct RemoteUsage {
  int64_t prompt_tokens = -1;  // -1: the server did not say
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;  // prompt tokens its prefix cache served
};

struct RemoteChatResult {
  std::vector<std::string> texts;           // one per choice index
  std::vector<std::string> finish_reasons;  // "stop", "length", ...; empty where it never came
  std::vector<int64_t> chunks;              // content chunks per choice (a server streams about a token each)
  std::vector<std::vector<RemoteToolCall>> tool_calls;  // per choice: the calls its reply made (delta.tool_calls joined)
  RemoteUsage usage;
  std::string model;            // as the server names it
  std::string response_id;      // the stream's "id" ("chatcmpl-..."), the first request's where n were sent
  double first_token_ms = -1;   // from the request's start to its first content
  double total_ms = 0;
  RemoteError error;
};

struct RemoteDelta {
  int index;              // the choice
  std::string_view text;  // the content it adds
};

// on_response: each request's response id as soon as its stream names it (its first chunk,
// before any text): how a watcher of the server's pool tells its own requests there
// (server/api/pool_watch.h's "response"). Called from the transfer's thread (n requests: several).
RemoteChatResult stream_chat(const Endpoint& endpoint, const RemoteChatRequest& request,
                             const std::function<void(const RemoteDelta&)>& on_delta = {},
                             const std::atomic<bool>* stop = nullptr,
                             const std::function<void(const std::string& response_id)>& on_response = {});

struct RemoteModels {
  std::vector<std::string> ids;
  RemoteError error;
};
RemoteModels list_models(const Endpoint& endpoint, const std::atomic<bool>* stop = nullptr);

// The endpoint's URL for a route ("chat/completions"): base_url with /v1 once, no double slash.
std::string route_url(const Endpoint& endpoint, std::string_view route);
// The request's JSON body (model given: the request's own or the one chosen for it).
std::string chat_request_json(const RemoteChatRequest& request, const std::string& model);

// One stream event's JSON applied to result (exposed for the fuzz target and tests): content
// appended per choice, tool calls (a call's pieces joined by their index: its id and name as
// they come, its arguments appended), finish reasons, usage, the model name, an error event. Returns false
// when the data is not an OpenAI-compatible chunk (the result then says bad_response).
bool apply_chunk(std::string_view data, RemoteChatResult& result, const std::function<void(const RemoteDelta&)>& on_delta);

}  // namespace pagedchat::remote
