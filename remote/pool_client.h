#pragma once
// A remote pagedchat-server's KV pool, as a client watches and steps it (server/api/pool_watch.h has
// the frames' JSON): the routes behind View > Watch a remote pool, the Engine toolbar on a
// watched server, and the lessons told there. Blocking calls, as remote/openai_client.h's.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "remote/openai_client.h"

namespace pagedchat::remote {

// A remote pagedchat-server's KV pool (GET /v1/kv/events, server/api/pool_watch.h): on_frame gets
// each frame's JSON as it arrives, until stop is set, the server goes or the stream breaks;
// the returned error says which (stopped, stream_cut, ...). Blocking, as stream_chat.
RemoteError watch_pool(const Endpoint& endpoint, const std::function<void(std::string_view json)>& on_frame,
                       const std::atomic<bool>* stop);
// Steps a remote pagedchat-server's engine (POST /v1/kv/control; the server must allow it):
// action "pause", "resume", "step" (steps of them) or "next_event" (until one changes a block).
RemoteError control_pool(const Endpoint& endpoint, const std::string& action, int steps = 1);
// A fresh pool of this shape on that server, its model kept (a lesson's scene): refused (409)
// while requests are in flight there. num_blocks 0: the server's own pool again, at once or,
// while requests are in flight, once the last has ended. The watchers' next frame shows it.
struct RemotePoolShape {
  int num_blocks = 0, num_host_blocks = 0, block_size = 0, max_context = 0, max_batched_tokens = 0;
};
RemoteError reset_pool(const Endpoint& endpoint, const RemotePoolShape& shape);
// One frame of it now (GET /v1/kv/snapshot), its JSON in *json.
RemoteError pool_snapshot(const Endpoint& endpoint, std::string* json);

}  // namespace pagedchat::remote
