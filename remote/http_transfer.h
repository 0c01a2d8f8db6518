#pragma once
// The remote client's HTTP plumbing, shared by its chat side (remote/openai_client.cpp) and its
// pool side (remote/pool_client.cpp); not an interface of its own: one libcurl transfer with our
// bounds (an error body, a JSON reply, nesting), stop flag and status-to-error mapping.

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "remote/openai_client.h"

namespace pagedchat::remote::detail {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr size_t kMaxErrorBody = 64 * 1024;  // an error reply is read this far, no further
inline constexpr size_t kMaxJsonBody = 16 << 20;    // a non-streamed reply or a model list
inline constexpr int kMaxJsonDepth = 64;            // deeper nesting is no OpenAI reply (and a stack risk)

inline void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The JSON's nesting stays shallow: a hostile server's "[[[[..." is refused before parsing.
inline bool shallow(std::string_view text) {
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

inline json parse(std::string_view text) {
  if (!shallow(text)) return json(json::value_t::discarded);
  return json::parse(text.begin(), text.end(), nullptr, false);
}

inline std::string string_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

inline int64_t int_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

// The server's error message: OpenAI's {"error": {"message": ...}}, or a bare {"message"},
// {"detail"} (FastAPI servers), or {"error": "text"}.
// An "error" member's words: itself when it is text, its message when it is an object.
inline std::string message_of(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  return error.is_object() ? string_at(error, "message") : std::string();
}

inline std::string error_message(std::string_view body) {
  const json j = parse(body);
  if (!j.is_object()) return {};
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) return message_of(*e);
  std::string m = string_at(j, "message");
  return m.empty() ? string_at(j, "detail") : m;
}

inline RemoteErrorKind kind_of_status(long status) {
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

}  // namespace pagedchat::remote::detail
