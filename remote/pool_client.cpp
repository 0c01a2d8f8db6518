// A remote pagedchat-server's pool: its frames (GET /v1/kv/events), one now (GET
// /v1/kv/snapshot) and step mode (POST /v1/kv/control), over the client's transfers.
#include "remote/pool_client.h"

#include "remote/http_transfer.h"
#include "remote/sse_parser.h"

namespace pagedchat::remote {
using namespace detail;

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

}  // namespace pagedchat::remote
