// The MCP session: JSON-RPC requests and their replies, with the server's own requests and
// notifications handled while a reply is awaited.
#include "mcp/mcp_client.h"

#include <chrono>
#include <nlohmann/json.hpp>

namespace pagedchat::mcp {

using json = nlohmann::json;
using Clock = Transport::Clock;

namespace {

// Lines that are not JSON-RPC are skipped (a server that logs to stdout by mistake still works),
// up to this many: then the server is given up as broken.
constexpr int64_t kMaxJunkLines = 1000;

struct TooDeep {};

// A message parsed with its nesting bounded (nlohmann's parser is iterative; the bound keeps
// what a hostile server sends from costing the app its stack later, or its memory now).
json parse_bounded(const std::string& text, int max_depth) {
  return json::parse(text, [max_depth](int depth, json::parse_event_t, json&) {
    if (depth > max_depth) throw TooDeep{};
    return true;
  });
}

// Compact JSON text. A model's text may hold broken UTF-8 (a tool name cut mid-character): such
// bytes go out as U+FFFD instead of making nlohmann throw.
std::string compact(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "…"; }

std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string human_bytes(size_t n) {
  char buf[32];
  if (n >= (size_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(n) / 1024);
  return buf;
}

}  // namespace

bool supported_protocol_version(const std::string& version) {
  return version == "2025-06-18" || version == "2025-03-26" || version == "2024-11-05" || version == "2025-11-25";
}

struct Client::Reply {
  bool done = false;
  bool is_error = false;
  std::string result;   // compact JSON
  std::string message;  // the error's message and code
};

Client::Client(std::string server_name, std::unique_ptr<Transport> transport, Limits limits)
    : name_(std::move(server_name)), transport_(std::move(transport)), limits_(limits) {}

Client::~Client() { close(); }

void Client::close() {
  if (transport_) transport_->close();
}

Error Client::transport_error(const std::string& what) const {
  Error e = transport_->failure();
  if (e.ok()) e = {ErrorKind::exited, "the MCP server '" + name_ + "' is gone"};
  e.sentence += " (during " + what + ")";
  return e;
}

void Client::handle_incoming(const std::string& text, int64_t waiting_for, Reply* reply,
                             const std::function<void(double, double, const std::string&)>* progress) {
  json m;
  try {
    m = parse_bounded(text, limits_.max_depth);
  } catch (const TooDeep&) {
    throw Error{ErrorKind::protocol, "the MCP server '" + name_ + "' sent a message nested deeper than " +
                                         std::to_string(limits_.max_depth) + " levels"};
  } catch (const json::exception&) {
    m = nullptr;
  }
  if (!m.is_object() || text_of(m, "jsonrpc") != "2.0") {
    last_junk_ = clip(text, 120);
    if (++junk_lines_ > kMaxJunkLines)
      throw Error{ErrorKind::protocol, "the MCP server '" + name_ + "' writes text that is not JSON-RPC: «" +
                                           last_junk_ + "»"};
    return;
  }
  const auto method = m.find("method");
  const auto id = m.find("id");
  if (method != m.end() && method->is_string()) {
    const std::string name = *method;
    if (id != m.end()) {  // the server's own request: ping is answered, the rest refused
      json answer = {{"jsonrpc", "2.0"}, {"id", *id}};
      if (name == "ping") answer["result"] = json::object();
      else answer["error"] = {{"code", -32601}, {"message", "PagedChat does not offer " + name}};
      transport_->send(compact(answer));
      return;
    }
    if (name == "notifications/tools/list_changed") tools_changed_ = true;
    if (name == "notifications/progress" && progress && *progress) {
      const json params = m.value("params", json::object());
      if (params.value("progressToken", json()) == json(waiting_for) && params.contains("progress") &&
          params["progress"].is_number()) {
        const double total =
            params.contains("total") && params["total"].is_number() ? params["total"].get<double>() : 0;
        (*progress)(params["progress"].get<double>(), total, text_of(params, "message"));
      }
    }
    return;  // other notifications (logging, resources) are not used
  }
  if (id == m.end() || !id->is_number_integer() || id->get<int64_t>() != waiting_for) return;  // a late reply
  reply->done = true;
  if (const auto err = m.find("error"); err != m.end()) {
    reply->is_error = true;
    const json e = err->is_object() ? *err : json::object();
    reply->message = clip(text_of(e, "message"), 300);
    if (e.contains("code") && e["code"].is_number_integer())
      reply->message += " (code " + std::to_string(e["code"].get<int64_t>()) + ")";
  } else if (const auto res = m.find("result"); res != m.end() && res->is_object()) {
    reply->result = compact(*res);
  } else {
    throw Error{ErrorKind::protocol, "the MCP server '" + name_ + "' answered without a result or an error"};
  }
}

Error Client::request(const std::string& method, const std::string& params_json, double timeout_s,
                      const std::atomic<bool>* stop,
                      const std::function<void(double, double, const std::string&)>* progress,
                      std::string* result_json) {
  const int64_t id = next_id_++;
  json msg = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params_json.empty()) msg["params"] = json::parse(params_json);
  if (progress && *progress) msg["params"]["_meta"]["progressToken"] = id;
  if (!transport_->send(compact(msg))) return transport_error(method);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto cancel = [&](const std::string& reason) {
    transport_->send(compact({{"jsonrpc", "2.0"},
                              {"method", "notifications/cancelled"},
                              {"params", {{"requestId", id}, {"reason", reason}}}}));
  };
  Reply reply;
  try {
    while (!reply.done) {
      if (stop && stop->load()) {
        cancel("stopped by the user");
        return {ErrorKind::cancelled, method + " on the MCP server '" + name_ + "' was stopped"};
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        cancel("timed out");
        std::string s = "the MCP server '" + name_ + "' did not answer " + method + " in " +
                        std::to_string(static_cast<int>(timeout_s)) + " s";
        if (!last_junk_.empty()) s += "; it wrote text that is not JSON-RPC: «" + last_junk_ + "»";
        return {ErrorKind::timeout, s};
      }
      // Wake at least every 100 ms to see `stop`.
      const auto wake = std::min(deadline, now + std::chrono::milliseconds(100));
      std::optional<std::string> text = transport_->receive(wake);
      if (!text) {
        if (transport_->failed()) return transport_error(method);
        continue;
      }
      handle_incoming(*text, id, &reply, progress);
    }
  } catch (const Error& e) {
    transport_->close();  // a server that breaks the protocol is not talked to again
    return e;
  }
  if (reply.is_error)
    return {ErrorKind::server_error, "the MCP server '" + name_ + "' refused " + method + ": " + reply.message};
  *result_json = std::move(reply.result);
  return {};
}

Error Client::start() {
  const json params = {{"protocolVersion", kProtocolVersion},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "PagedChat"}, {"version", "0.1.0"}}}};
  std::string result;
  if (Error e = request("initialize", compact(params), limits_.start_timeout_s, nullptr, nullptr, &result); !e.ok())
    return e;
  const json r = json::parse(result);
  server_.protocol_version = text_of(r, "protocolVersion");
  if (!supported_protocol_version(server_.protocol_version)) {
    transport_->close();
    return {ErrorKind::protocol, "the MCP server '" + name_ + "' speaks protocol version '" +
                                     clip(server_.protocol_version, 40) + "', which PagedChat does not"};
  }
  if (const auto info = r.find("serverInfo"); info != r.end() && info->is_object()) {
    server_.name = clip(text_of(*info, "name"), 200);
    server_.version = clip(text_of(*info, "version"), 100);
  }
  server_.instructions = clip(text_of(r, "instructions"), 4000);
  const json caps = r.value("capabilities", json::object());
  if (caps.is_object() && caps.contains("tools") && caps["tools"].is_object())
    server_.tools_list_changed = caps["tools"].value("listChanged", false);
  if (!transport_->send(compact({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}})))
    return transport_error("initialize");
  started_ = true;
  return {};
}

Error Client::list_tools(std::vector<Tool>* tools) {
  if (!started_) return {ErrorKind::protocol, "the MCP server '" + name_ + "' was not started"};
  tools->clear();
  tools_changed_ = false;
  std::string cursor;
  for (int page = 0;; ++page) {
    if (page == limits_.max_pages)
      return {ErrorKind::protocol, "the MCP server '" + name_ + "' lists its tools over more than " +
                                       std::to_string(limits_.max_pages) + " pages"};
    json params = json::object();
    if (!cursor.empty()) params["cursor"] = cursor;
    std::string result;
    if (Error e = request("tools/list", compact(params), limits_.request_timeout_s, nullptr, nullptr, &result); !e.ok())
      return e;
    const json r = json::parse(result);
    const auto list = r.find("tools");
    if (list == r.end() || !list->is_array())
      return {ErrorKind::protocol, "the MCP server '" + name_ + "' answered tools/list without a list of tools"};
    for (const json& t : *list) {
      const std::string name = t.is_object() ? text_of(t, "name") : std::string();
      if (name.empty() || name.size() > 128) continue;  // nothing a model could call
      if (static_cast<int>(tools->size()) == limits_.max_tools)
        return {ErrorKind::protocol, "the MCP server '" + name_ + "' offers more than " +
                                         std::to_string(limits_.max_tools) + " tools"};
      Tool tool{name, clip(text_of(t, "title"), 200), clip(text_of(t, "description"), 4000), R"({"type":"object"})"};
      if (const auto schema = t.find("inputSchema"); schema != t.end() && schema->is_object())
        tool.input_schema = compact(*schema);
      tools->push_back(std::move(tool));
    }
    cursor = text_of(r, "nextCursor");
    if (cursor.empty()) return {};
  }
}

Error Client::call_tool(const std::string& name, const std::string& arguments_json, ToolResult* result,
                        const CallOptions& options) {
  if (!started_) return {ErrorKind::protocol, "the MCP server '" + name_ + "' was not started"};
  json args;
  try {
    args = json::parse(arguments_json);
  } catch (const json::exception&) {
    args = nullptr;
  }
  if (!args.is_object()) return {ErrorKind::protocol, "the arguments for " + name + " are not a JSON object"};
  const json params = {{"name", name}, {"arguments", args}};
  std::string text;
  const double timeout = options.timeout_s > 0 ? options.timeout_s : limits_.call_timeout_s;
  if (Error e = request("tools/call", compact(params), timeout, options.stop, &options.on_progress, &text); !e.ok())
    return e;
  const json r = json::parse(text);
  *result = {};
  result->is_error = r.value("isError", false);
  auto append = [&](const std::string& s) {
    result->full_bytes += s.size();
    if (result->text.size() < limits_.max_result_bytes)
      result->text += s.substr(0, limits_.max_result_bytes - result->text.size());
  };
  int items = 0;
  if (const auto content = r.find("content"); content != r.end() && content->is_array()) {
    for (const json& c : *content) {
      if (++items > limits_.max_content_items) break;
      if (!c.is_object()) continue;
      const std::string type = text_of(c, "type");
      if (!result->text.empty() || result->full_bytes > 0) append("\n");
      if (type == "text") append(text_of(c, "text"));
      else if (type == "image" || type == "audio")
        append("[" + type + ", " + text_of(c, "mimeType") + ", " + human_bytes(text_of(c, "data").size() * 3 / 4) +
               "]");
      else if (type == "resource" && c.contains("resource") && c["resource"].is_object())
        append(c["resource"].contains("text") ? text_of(c["resource"], "text")
                                              : "[resource " + text_of(c["resource"], "uri") + "]");
      else if (type == "resource_link") append("[link " + text_of(c, "uri") + "]");
    }
  }
  if (const auto s = r.find("structuredContent"); s != r.end() && !s->is_null()) {
    result->structured = compact(*s);
    if (result->full_bytes == 0) append(result->structured);
  }
  result->truncated = result->full_bytes > limits_.max_result_bytes;
  if (result->truncated)
    result->text += "\n[cut: the tool returned " + human_bytes(result->full_bytes) + "; the first " +
                    human_bytes(limits_.max_result_bytes) + " are kept]";
  return {};
}

Error Client::ping() {
  std::string result;
  return request("ping", "", limits_.request_timeout_s, nullptr, nullptr, &result);
}

}  // namespace pagedchat::mcp
