// Streamable HTTP over libcurl: one easy handle per POST, the reply read as JSON or as server-sent
// events (remote/sse_parser.h), every byte counted against Limits.
#include "mcp/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "engine/common/ascii_text.h"
#include "mcp/mcp_client.h"
#include "remote/sse_parser.h"

namespace pagedchat::mcp {
namespace {

constexpr size_t kMaxErrorBody = 2048;  // of an error reply, kept for the sentence

void init_curl() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One POST's state, shared with libcurl's callbacks.
struct Post {
  const std::atomic<bool>* closing = nullptr;
  size_t max_bytes = 0;
  std::function<void(std::string)> on_session;  // the reply's Mcp-Session-Id
  std::string content_type;  // from the reply's headers
  long status = 0;
  bool decided = false;
  bool too_big = false;
  std::string body;  // a JSON reply, or an error reply's start
  remote::SseParser sse;
  std::function<void(std::string)> deliver;

  explicit Post(size_t max) : max_bytes(max), sse(max) {}

  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* p = static_cast<Post*>(self);
    const std::string line(data, size * count);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      const std::string key = ascii_lower(line.substr(0, colon));
      // Kept at once: the reply in this response's body is delivered before the transfer ends,
      // and the client's next message must carry the id.
      if (key == "mcp-session-id") p->on_session(trim_space(line.substr(colon + 1)).substr(0, 256));
      if (key == "content-type") p->content_type = ascii_lower(trim_space(line.substr(colon + 1)));
    }
    return size * count;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto* p = static_cast<Post*>(self);
    const size_t n = size * count;
    const bool stream = p->status == 200 && p->content_type.find("text/event-stream") != std::string::npos;
    if (stream) {
      p->sse.feed(std::string_view(data, n), [&](const remote::SseEvent& e) {
        if (!e.data.empty()) p->deliver(e.data);
      });
      if (p->sse.overflowed()) {
        p->too_big = true;
        return 0;
      }
      return n;
    }
    const size_t limit = p->status == 200 ? p->max_bytes : kMaxErrorBody;
    if (p->body.size() + n > limit) {
      p->too_big = p->status == 200;
      p->body.append(data, limit - p->body.size());
      return p->status == 200 ? 0 : n;
    }
    p->body.append(data, n);
    return n;
  }

  static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<Post*>(self)->closing->load() ? 1 : 0;
  }
};

struct WriteTarget {
  CURL* handle;
  Post* post;
};
size_t write_body(char* data, size_t size, size_t count, void* self) {
  auto* t = static_cast<WriteTarget*>(self);
  if (!t->post->decided) {
    t->post->decided = true;
    curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &t->post->status);
  }
  return Post::on_body(data, size, count, t->post);
}
size_t discard_body(char*, size_t size, size_t count, void*) { return size * count; }

}  // namespace

HttpTransport::HttpTransport(std::string server_name, HttpEndpoint endpoint, const Limits& limits)
    : name_(std::move(server_name)), endpoint_(std::move(endpoint)), limits_(limits) {
  init_curl();
}

HttpTransport::~HttpTransport() { close(); }

std::string HttpTransport::session_id() const {
  std::lock_guard lock(mutex_);
  return session_id_;
}

void HttpTransport::fail(ErrorKind kind, std::string sentence) {
  if (!closing_) queue_.fail({kind, std::move(sentence)});
}

void HttpTransport::deliver(std::string message) { queue_.push(std::move(message)); }

bool HttpTransport::send(const std::string& message) {
  std::lock_guard lock(mutex_);
  if (!queue_.failure().ok() || closed_) return false;
  // The POSTs that ended are joined here, so that a long session does not gather threads.
  for (auto it = posts_.begin(); it != posts_.end();) {
    if (*it->done) {
      it->thread.join();
      it = posts_.erase(it);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  posts_.push_back({std::thread([this, message, done] {
                      post(message);
                      *done = true;
                    }),
                    done});
  return true;
}

void HttpTransport::post(std::string body) {
  CURL* h = curl_easy_init();
  if (!h) return fail(ErrorKind::http, "could not reach the MCP server '" + name_ + "': libcurl did not start");
  Post p(limits_.max_message_bytes);
  p.closing = &closing_;
  p.deliver = [this](std::string m) { deliver(std::move(m)); };
  p.on_session = [this](std::string id) {
    std::lock_guard lock(mutex_);
    if (session_id_.empty()) session_id_ = std::move(id);
  };
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  headers = curl_slist_append(headers, (std::string("MCP-Protocol-Version: ") + kProtocolVersion).c_str());
  if (const std::string id = session_id(); !id.empty()) headers = curl_slist_append(headers, ("Mcp-Session-Id: " + id).c_str());
  for (const auto& [k, v] : endpoint_.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  char message[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(h, CURLOPT_URL, endpoint_.url.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Post::on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &p);
  // The status is known once the headers are: the first body callback reads it.
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &write_body);
  WriteTarget write_target{h, &p};
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &write_target);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &Post::on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &p);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, endpoint_.connect_timeout_s);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "pagedchat/0.1");
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, message);
  const CURLcode rc = curl_easy_perform(h);
  if (!p.decided) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &p.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);

  if (closing_) return;
  const std::string who = "the MCP server '" + name_ + "' (" + endpoint_.url + ")";
  if (p.too_big)
    return fail(ErrorKind::protocol, who + " sent a message over " + std::to_string(limits_.max_message_bytes >> 20) + " MiB");
  if (rc == CURLE_COULDNT_CONNECT) return fail(ErrorKind::http, "nothing answers at " + who + ": is it running?");
  if (rc == CURLE_COULDNT_RESOLVE_HOST) return fail(ErrorKind::http, "the host of " + who + " is not found");
  if (rc != CURLE_OK)
    return fail(ErrorKind::http, "the connection to " + who + " failed: " + (message[0] ? message : curl_easy_strerror(rc)));
  if (p.status == 202 || (p.status == 200 && p.body.empty() && p.content_type.find("json") == std::string::npos)) return;
  if (p.status == 404 && body.find("\"initialize\"") == std::string::npos)
    return fail(ErrorKind::http, who + " ended the session (HTTP 404): connect again");
  if (p.status == 401 || p.status == 403)
    return fail(ErrorKind::http, who + " refused the request (HTTP " + std::to_string(p.status) +
                                     "): check the headers (a token) in mcp.json");
  if (p.status != 200) {
    std::string said = trim_space(p.body.substr(0, 200));
    return fail(ErrorKind::http, who + " answered HTTP " + std::to_string(p.status) + (said.empty() ? "" : ": " + said));
  }
  if (!p.body.empty()) deliver(std::move(p.body));
}

std::optional<std::string> HttpTransport::receive(Clock::time_point deadline) { return queue_.pop(deadline); }

bool HttpTransport::failed() const { return queue_.failed(); }

Error HttpTransport::failure() const { return queue_.failure(); }

void HttpTransport::close() {
  std::vector<PostThread> posts;
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    posts.swap(posts_);
    id = session_id_;
  }
  queue_.fail({ErrorKind::exited, "the connection to the MCP server '" + name_ + "' was closed"});
  closing_ = true;  // every transfer in flight stops at its next progress callback
  for (PostThread& t : posts) t.thread.join();
  if (id.empty()) return;
  // The protocol's end of a session: DELETE with its id, briefly (a server may not support it).
  if (CURL* h = curl_easy_init()) {
    curl_slist* headers = curl_slist_append(nullptr, ("Mcp-Session-Id: " + id).c_str());
    for (const auto& [k, v] : endpoint_.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
    curl_easy_setopt(h, CURLOPT_URL, endpoint_.url.c_str());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &discard_body);
    curl_easy_perform(h);
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
  }
}

}  // namespace pagedchat::mcp
