#include "remote/openai_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "remote/sse_parser.h"

namespace pagedchat::remote {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxErrorBody = 64 * 1024;  // an error reply is read this far, no further
constexpr size_t kMaxJsonBody = 16 << 20;    // a non-streamed reply or a model list
constexpr int kMaxJsonDepth = 64;            // deeper nesting is no OpenAI reply (and a stack risk)

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The JSON's nesting stays shallow: a hostile server's "[[[[..." is refused before parsing.
bool shallow(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

json parse(std::string_view text) {
  if (!shallow(text)) return json(json::value_t::discarded);
  return json::parse(text.begin(), text.end(), nullptr, false);
}

std::string string_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t int_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

// The server's error message: OpenAI's {"error": {"message": ...}}, or a bare {"message"},
// {"detail"} (FastAPI servers), or {"error": "text"}.
// An "error" member's words: itself when it is text, its message when it is an object.
std::string message_of(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  return error.is_object() ? string_at(error, "message") : std::string();
}

std::string error_message(std::string_view body) {
  const json j = parse(body);
  if (!j.is_object()) return {};
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) return message_of(*e);
  std::string m = string_at(j, "message");
  return m.empty() ? string_at(j, "detail") : m;
}

RemoteErrorKind kind_of_status(long status) {
  if (status == 401) return RemoteErrorKind::unauthorized;
  if (status == 403) return RemoteErrorKind::forbidden;
  if (status == 404) return RemoteErrorKind::not_found;
  if (status == 429) return RemoteErrorKind::rate_limited;
  if (status >= 500) return RemoteErrorKind::server_error;
  return RemoteErrorKind::bad_request;
}

// One transfer's state, shared with libcurl's callbacks.
struct Transfer {
  CURL* h = nullptr;
  curl_slist* headers = nullptr;
  std::string url;
  long status = 0;
  bool streaming = false;  // the response is text/event-stream
  bool decided = false;    // status and content type read (at the first body byte)
  std::string body;        // an error reply, or a reply that is not a stream
  int retry_after_s = -1;
  bool body_too_large = false;
  const std::atomic<bool>* stop = nullptr;
  std::function<bool(std::string_view)> on_stream_bytes;  // false: read no more (a done, broken or endless stream)
  char message[CURL_ERROR_SIZE] = {};  // libcurl's words; registered for the handle's whole life

  Transfer() : h(curl_easy_init()) {}
  ~Transfer() {
    if (headers) curl_slist_free_all(headers);
    if (h) curl_easy_cleanup(h);
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    constexpr std::string_view kRetry = "retry-after:";
    if (line.size() > kRetry.size()) {
      std::string lower(line.substr(0, kRetry.size()));
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower == kRetry) {
        try {
          t->retry_after_s = std::stoi(std::string(line.substr(kRetry.size())));
        } catch (...) {
          t->retry_after_s = -1;  // an HTTP date: not worth parsing for a hint
        }
      }
    }
    return size * count;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const size_t n = size * count;
    if (!t->decided) {
      t->decided = true;
      curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &t->status);
      const char* type = nullptr;
      curl_easy_getinfo(t->h, CURLINFO_CONTENT_TYPE, &type);
      t->streaming = t->status == 200 && type && std::strstr(type, "text/event-stream") != nullptr;
    }
    if (t->streaming && t->on_stream_bytes) return t->on_stream_bytes(std::string_view(data, n)) ? n : 0;
    const size_t limit = t->status == 200 ? kMaxJsonBody : kMaxErrorBody;
    if (t->body.size() + n > limit) {
      t->body_too_large = t->status == 200;
      t->body.append(data, limit - t->body.size());
      return t->status == 200 ? 0 : n;  // an error reply's tail is dropped, a reply's is refused
    }
    t->body.append(data, n);
    return n;
  }

  static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(self);
    return t->stop && t->stop->load() ? 1 : 0;
  }

  void setup(const Endpoint& e) {
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    if (!e.api_key.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + e.api_key).c_str());
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, this);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, e.connect_timeout_s);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, e.stall_timeout_s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
    curl_easy_setopt(h, CURLOPT_USERAGENT, "pagedchat/0.1");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  }

  // Runs the transfer; the error it ended with (kind none: a complete HTTP exchange).
  RemoteError perform() {
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, message);
    const CURLcode rc = curl_easy_perform(h);
    if (!decided) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    RemoteError e;
    e.url = url;
    e.http_status = static_cast<int>(status);
    e.detail = message[0] ? message : curl_easy_strerror(rc);
    switch (rc) {
      case CURLE_OK: e.detail.clear(); break;
      case CURLE_ABORTED_BY_CALLBACK: e.kind = RemoteErrorKind::stopped; break;
      case CURLE_COULDNT_CONNECT: e.kind = RemoteErrorKind::refused; break;
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY: e.kind = RemoteErrorKind::unreachable; break;
      case CURLE_OPERATION_TIMEDOUT: {
        // Connected and then silent (a long queue, a slow prefill) is a stall, not an absent server.
        double connect_s = 0;
        curl_easy_getinfo(h, CURLINFO_CONNECT_TIME, &connect_s);
        e.kind = decided || status || connect_s > 0 ? RemoteErrorKind::timeout : RemoteErrorKind::unreachable;
        break;
      }
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CACERT_BADFILE: e.kind = RemoteErrorKind::unreachable; break;  // TLS: the sentence gives libcurl's words
      case CURLE_WRITE_ERROR: e.kind = RemoteErrorKind::bad_response; break;  // a reply past our limits
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL: e.kind = RemoteErrorKind::bad_request; break;
      default: e.kind = RemoteErrorKind::stream_cut; break;  // partial, reset, nothing received
    }
    if (e.ok() && status != 200) {
      e.kind = kind_of_status(status);
      e.server_message = error_message(body);
      e.retry_after_s = retry_after_s;
    }
    return e;
  }
};

}  // namespace

std::string RemoteError::sentence() const {
  const std::string said = server_message.empty() ? std::string() : ": " + server_message;
  const std::string code = http_status ? " (" + std::to_string(http_status) + ")" : std::string();
  switch (kind) {
    case RemoteErrorKind::none: return {};
    case RemoteErrorKind::stopped: return "Stopped.";
    case RemoteErrorKind::refused:
      return "Nothing answers at " + url + ": is the server running, and on this port?";
    case RemoteErrorKind::unreachable: return "The server at " + url + " cannot be reached (" + detail + ").";
    case RemoteErrorKind::timeout: return "The server stopped sending (" + detail + "); the request was given up.";
    case RemoteErrorKind::unauthorized:
      return "The server refused the API key" + code + said + ". Check the key set for this endpoint.";
    case RemoteErrorKind::forbidden: return "The server does not allow this request" + code + said + ".";
    case RemoteErrorKind::not_found: return "The server has no such route or model" + code + said + ".";
    case RemoteErrorKind::rate_limited:
      return "The server is busy" + code + said + "; try again" +
             (retry_after_s >= 0 ? " in " + std::to_string(retry_after_s) + " s." : " in a moment.");
    case RemoteErrorKind::bad_request: return "The server rejected the request" + code + said + ".";
    case RemoteErrorKind::server_error: return "The server failed" + code + said + ".";
    case RemoteErrorKind::stream_cut:
      if (http_status == 0) return "The server at " + url + " closed the connection without answering (" + detail + ").";
      return "The connection closed before the reply ended (the server stopped, or the network dropped); what "
             "arrived is kept.";
    case RemoteErrorKind::bad_response: return "The server's reply is not an OpenAI-compatible one" + said + ".";
  }
  return {};
}

std::string route_url(const Endpoint& endpoint, std::string_view route) {
  std::string base = endpoint.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() < 3 || base.compare(base.size() - 3, 3, "/v1") != 0) base += "/v1";
  return base + "/" + std::string(route);
}

std::string chat_request_json(const RemoteChatRequest& r, const std::string& model) {
  json messages = json::array();
  for (const RemoteMessage& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", model},
               {"messages", std::move(messages)},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", r.max_tokens},
               {"temperature", r.temperature},
               {"top_p", r.top_p}};
  if (r.n != 1) body["n"] = r.n;
  if (r.seed) body["seed"] = *r.seed;
  if (!r.stop.empty()) body["stop"] = r.stop;
  if (r.frequency_penalty != 0.0) body["frequency_penalty"] = r.frequency_penalty;
  if (r.presence_penalty != 0.0) body["presence_penalty"] = r.presence_penalty;
  if (r.beam_search) body["use_beam_search"] = true;
  // Invalid UTF-8 in a message goes as U+FFFD rather than failing the whole request.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool apply_chunk(std::string_view data, RemoteChatResult& result, const std::function<void(const RemoteDelta&)>& on_delta) {
  const json j = parse(data);
  if (!j.is_object()) return false;
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
    // An error after the stream began (llama.cpp and vLLM send one as a data event).
    result.error.kind = RemoteErrorKind::server_error;
    result.error.server_message = message_of(*e);
    return true;
  }
  if (std::string m = string_at(j, "model"); !m.empty()) result.model = std::move(m);
  if (result.response_id.empty()) result.response_id = string_at(j, "id");
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    result.usage.prompt_tokens = int_at(*u, "prompt_tokens");
    result.usage.completion_tokens = int_at(*u, "completion_tokens");
    if (const auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      result.usage.cached_tokens = int_at(*d, "cached_tokens");
  }
  const auto choices = j.find("choices");
  if (choices == j.end()) return j.contains("usage");  // the usage-only last chunk
  if (!choices->is_array()) return false;
  constexpr int64_t kMaxChoices = 128;
  for (const json& c : *choices) {
    if (!c.is_object()) return false;
    const int64_t index = int_at(c, "index") < 0 ? 0 : int_at(c, "index");
    if (index >= kMaxChoices) return false;
    const size_t i = static_cast<size_t>(index);
    if (result.texts.size() <= i) {
      result.texts.resize(i + 1);
      result.finish_reasons.resize(i + 1);
      result.chunks.resize(i + 1);
    }
    const auto delta = c.find("delta");
    if (delta != c.end() && delta->is_object()) {
      const std::string text = string_at(*delta, "content");
      if (!text.empty()) {
        result.texts[i] += text;
        ++result.chunks[i];
        if (on_delta) on_delta({static_cast<int>(i), text});
      }
    } else if (const auto message = c.find("message"); message != c.end() && message->is_object()) {
      result.texts[i] += string_at(*message, "content");  // a whole reply (a server that does not stream)
    }
    if (std::string f = string_at(c, "finish_reason"); !f.empty()) result.finish_reasons[i] = std::move(f);
  }
  return true;
}

RemoteError watch_pool(const Endpoint& endpoint, const std::function<void(std::string_view json)>& on_frame,
                       const std::atomic<bool>* stop) {
  init_curl();
  Transfer t;
  t.url = route_url(endpoint, "kv/events");
  t.stop = stop;
  t.setup(endpoint);
  t.headers = curl_slist_append(t.headers, "Accept: text/event-stream");
  // A frame holds the whole pool: a large pool's is a few MiB (the parser's limit is per event).
  SseParser sse(size_t{64} << 20);
  t.on_stream_bytes = [&](std::string_view bytes) {
    sse.feed(bytes, [&](const SseEvent& e) {
      if (e.event == "pool" && !e.data.empty()) on_frame(e.data);
    });
    return !sse.overflowed();
  };
  RemoteError e = t.perform();
  if (e.ok() && !t.streaming && t.status == 200) {
    e.kind = RemoteErrorKind::bad_response;
    e.server_message = "GET /v1/kv/events sent no event stream (is it a PagedChat server?)";
  } else if (e.ok()) {
    e.kind = RemoteErrorKind::stream_cut;  // a watch ends only when stopped or cut
    e.http_status = static_cast<int>(t.status);
  }
  return e;
}

namespace {
RemoteError post_control(const Endpoint& endpoint, const json& command) {
  init_curl();
  Transfer t;
  t.url = route_url(endpoint, "kv/control");
  t.setup(endpoint);
  t.headers = curl_slist_append(t.headers, "Content-Type: application/json");
  const std::string body = command.dump();
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(t.h, CURLOPT_TIMEOUT, endpoint.connect_timeout_s + 20);
  return t.perform();
}
}  // namespace

RemoteError control_pool(const Endpoint& endpoint, const std::string& action, int steps) {
  return post_control(endpoint, {{"action", action}, {"steps", steps}});
}

RemoteError reset_pool(const Endpoint& endpoint, const RemotePoolShape& shape) {
  if (shape.num_blocks == 0) return post_control(endpoint, {{"action", "reset"}});
  return post_control(endpoint, {{"action", "reset"},
                                 {"kv_blocks", shape.num_blocks},
                                 {"host_blocks", shape.num_host_blocks},
                                 {"block_size", shape.block_size},
                                 {"max_context", shape.max_context},
                                 {"step_tokens", shape.max_batched_tokens}});
}

RemoteError pool_snapshot(const Endpoint& endpoint, std::string* json) {
  init_curl();
  Transfer t;
  t.url = route_url(endpoint, "kv/snapshot");
  t.setup(endpoint);
  curl_easy_setopt(t.h, CURLOPT_TIMEOUT, endpoint.connect_timeout_s + 20);
  RemoteError e = t.perform();
  if (e.ok()) *json = std::move(t.body);
  return e;
}

RemoteModels list_models(const Endpoint& endpoint, const std::atomic<bool>* stop) {
  init_curl();
  RemoteModels out;
  Transfer t;
  t.url = route_url(endpoint, "models");
  t.stop = stop;
  t.setup(endpoint);
  curl_easy_setopt(t.h, CURLOPT_TIMEOUT, endpoint.connect_timeout_s + 20);
  out.error = t.perform();
  if (!out.error.ok()) return out;
  const json j = parse(t.body);
  const auto data = j.is_object() ? j.find("data") : j.end();
  if (!j.is_object() || data == j.end() || !data->is_array()) {
    out.error.kind = RemoteErrorKind::bad_response;
    out.error.server_message = "GET /v1/models sent no list of models";
    return out;
  }
  for (const json& m : *data)
    if (m.is_object())
      if (std::string id = string_at(m, "id"); !id.empty()) out.ids.push_back(std::move(id));
  return out;
}

namespace {
using ResponseIdCallback = std::function<void(const std::string&)>;

RemoteChatResult stream_one(const Endpoint& endpoint, const RemoteChatRequest& request, const std::string& model,
                            const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                            const ResponseIdCallback& on_response) {
  RemoteChatResult result;
  const Clock::time_point start = Clock::now();
  auto ms_since_start = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  Transfer t;
  t.url = route_url(endpoint, "chat/completions");
  t.stop = stop;
  t.setup(endpoint);
  t.headers = curl_slist_append(t.headers, "Content-Type: application/json");
  t.headers = curl_slist_append(t.headers, "Accept: text/event-stream");
  t.headers = curl_slist_append(t.headers, "Expect:");  // no 100-continue wait before a long body
  const std::string body = chat_request_json(request, model);
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));

  SseParser sse(1 << 20);
  bool done = false, malformed = false;
  auto delta = [&](const RemoteDelta& d) {
    if (result.first_token_ms < 0) result.first_token_ms = ms_since_start();
    if (on_delta) on_delta(d);
  };
  // A server that streams on past anything the request could need is cut off.
  const int64_t max_chunks = (int64_t{request.max_tokens} + 64) * std::max(request.n, 1) * 2;
  int64_t chunks_seen = 0;
  bool endless = false, announced = false;
  auto fail_with = [&](std::string_view json_or_text) {
    result.error.kind = RemoteErrorKind::server_error;
    result.error.server_message = error_message(json_or_text);
    if (result.error.server_message.empty()) result.error.server_message = std::string(json_or_text.substr(0, 500));
    done = true;
  };
  t.on_stream_bytes = [&](std::string_view bytes) {
    sse.feed(bytes, [&](const SseEvent& e) {
      if (done || malformed || endless) return;
      if (!e.error.empty()) return fail_with(e.error);  // llama.cpp's "error:" line
      if (e.event == "error") return fail_with(e.data);
      if (!e.event.empty() && e.event != "message") return;  // pings, and types of other uses
      if (e.data.empty()) return;
      if (e.data == "[DONE]") {
        done = true;
        return;
      }
      if (++chunks_seen > max_chunks) {
        endless = true;
        return;
      }
      if (!apply_chunk(e.data, result, delta)) malformed = true;
      if (!announced && !result.response_id.empty()) {
        announced = true;
        if (on_response) on_response(result.response_id);
      }
    });
    // Read no more once the stream is over or cannot be trusted (the transfer then ends at once).
    return !(done || malformed || endless || sse.overflowed());
  };
  RemoteError transfer = t.perform();
  // The transfer ended because we stopped reading: judged below, by why.
  if (transfer.kind == RemoteErrorKind::bad_response && t.streaming && (done || malformed || endless || sse.overflowed()))
    transfer = RemoteError{};
  result.total_ms = ms_since_start();
  if (result.model.empty()) result.model = model;
  if (!transfer.ok()) {
    if (transfer.kind == RemoteErrorKind::bad_response && t.body_too_large) transfer.server_message = "a reply past 16 MiB";
    result.error = std::move(transfer);
    return result;
  }
  if (!result.error.ok()) {  // an error event inside the stream
    result.error.url = t.url;
    return result;
  }
  if (!t.streaming) {
    // A server that answered with one JSON reply instead of a stream.
    if (!apply_chunk(t.body, result, delta)) {
      result.error.kind = RemoteErrorKind::bad_response;
      result.error.url = t.url;
    }
    return result;
  }
  if (malformed || sse.overflowed() || endless) {
    result.error.kind = RemoteErrorKind::bad_response;
    result.error.server_message = sse.overflowed() ? "an event past 1 MiB"
                                  : endless      ? "more chunks than max_tokens allows, without an end"
                                                 : "a stream event that is not a completion chunk";
    result.error.url = t.url;
    return result;
  }
  const bool finished = !result.finish_reasons.empty() &&
                        std::all_of(result.finish_reasons.begin(), result.finish_reasons.end(), [](const std::string& f) { return !f.empty(); });
  if (!done && !finished) {
    // The connection closed cleanly but the reply never ended: a server killed between chunks.
    result.error.kind = RemoteErrorKind::stream_cut;
    result.error.http_status = static_cast<int>(t.status);
    result.error.url = t.url;
  }
  return result;
}

// Appends from's samples after into's (their texts, finish reasons and chunks), the tokens they
// took (unknown once any part's are), the earliest first token and the first error.
void append_samples(RemoteChatResult& into, const RemoteChatResult& from) {
  for (size_t i = 0; i < from.texts.size(); ++i) {
    into.texts.push_back(from.texts[i]);
    into.finish_reasons.push_back(i < from.finish_reasons.size() ? from.finish_reasons[i] : std::string());
    into.chunks.push_back(i < from.chunks.size() ? from.chunks[i] : 0);
  }
  into.usage.completion_tokens = into.usage.completion_tokens < 0 || from.usage.completion_tokens < 0
                                     ? -1
                                     : into.usage.completion_tokens + from.usage.completion_tokens;
  if (from.first_token_ms >= 0 && (into.first_token_ms < 0 || from.first_token_ms < into.first_token_ms))
    into.first_token_ms = from.first_token_ms;
  if (into.error.ok() && !from.error.ok()) into.error = from.error;
}

// n samples as n requests at once, for a server that takes no n (llama.cpp's server): each
// its own sample (seeded seed, seed + 1, ...), streamed as choice first_index + i.
RemoteChatResult stream_in_parallel(const Endpoint& endpoint, const RemoteChatRequest& request, const std::string& model,
                                    const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                                    const ResponseIdCallback& on_response, int first_index = 0) {
  const size_t n = static_cast<size_t>(request.n);
  std::vector<RemoteChatResult> parts(n);
  std::mutex delta_mutex;  // one sample's delta at a time reaches the caller
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      RemoteChatRequest one = request;
      one.n = 1;
      if (one.seed) *one.seed += i;
      parts[i] = stream_one(endpoint, one, model, [&](const RemoteDelta& d) {
        std::lock_guard<std::mutex> lock(delta_mutex);
        if (on_delta) on_delta({first_index + static_cast<int>(i), d.text});
      }, stop, on_response);
    });
  for (std::thread& t : threads) t.join();
  RemoteChatResult out;
  out.model = parts[0].model;
  out.response_id = parts[0].response_id;
  out.usage.prompt_tokens = parts[0].usage.prompt_tokens;
  out.usage.cached_tokens = parts[0].usage.cached_tokens;
  out.usage.completion_tokens = 0;
  for (RemoteChatResult& p : parts) {
    // One sample a request, a failed one's empty: the samples keep their places.
    p.texts.resize(1);
    p.finish_reasons.resize(1);
    p.chunks.resize(1);
    append_samples(out, p);
    out.total_ms = std::max(out.total_ms, p.total_ms);
  }
  return out;
}
}  // namespace

RemoteChatResult stream_chat(const Endpoint& endpoint, const RemoteChatRequest& request,
                             const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                             const ResponseIdCallback& on_response) {
  init_curl();
  std::string model = request.model;
  if (model.empty()) {
    RemoteModels models = list_models(endpoint, stop);  // Stop cuts this request short too
    RemoteChatResult failed;
    if (!models.error.ok()) {
      failed.error = std::move(models.error);
      return failed;
    }
    if (models.ids.empty()) {
      failed.error.kind = RemoteErrorKind::not_found;
      failed.error.server_message = "it lists no models";
      return failed;
    }
    model = models.ids.front();
  }
  bool any_text = false;
  RemoteChatResult r = stream_one(endpoint, request, model, [&](const RemoteDelta& d) {
    any_text = true;
    if (on_delta) on_delta(d);
  }, stop, on_response);
  // A server without n says so (400) before any text, or answers one choice only: then n requests.
  auto about_n = [](const std::string& m) {
    return m.find("choice") != std::string::npos || m.find("'n'") != std::string::npos ||
           m.find("\"n\"") != std::string::npos || m.find(" n ") != std::string::npos || m.rfind("n ", 0) == 0;
  };
  const bool refused_n = r.error.kind == RemoteErrorKind::bad_request && !any_text && about_n(r.error.server_message);
  const bool one_choice = r.error.ok() && r.texts.size() == 1;
  if (request.n > 1 && (refused_n || one_choice) && !(stop && stop->load())) {
    if (one_choice) {
      // Keep the sample that came; ask for the others, after it.
      RemoteChatRequest rest = request;
      rest.n -= 1;
      if (rest.seed) *rest.seed += 1;
      const RemoteChatResult more = stream_in_parallel(endpoint, rest, model, on_delta, stop, on_response, 1);
      append_samples(r, more);
      r.total_ms += more.total_ms;
      return r;
    }
    return stream_in_parallel(endpoint, request, model, on_delta, stop, on_response);
  }
  return r;
}

}  // namespace pagedchat::remote
