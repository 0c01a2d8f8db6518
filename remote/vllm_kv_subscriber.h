#pragma once
// vLLM's KV cache events read live: a ZeroMQ SUB socket on the publisher vLLM starts with
// --kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq", ...}', and its replay
// socket for what the feed lost. Each batch comes out decoded (remote/vllm_kv_events.h), once,
// in sequence order. Runs on the caller's thread until stopped; no Qt.
//
// The protocol (vLLM's ZmqEventPublisher): the feed's messages are [topic, seq, payload], seq an
// 8-byte big-endian count from 0. A replay request on a DEALER socket, ["", from], is answered
// ["", seq, payload] for every batch the publisher still buffers with seq >= from, then
// ["", -1 (8 bytes, signed), ""].
//
// What the reader does with it:
// - The first batch seen: with a replay endpoint and seq > 0, it asks for everything from 0,
//   so the view starts from the whole cache the publisher still buffers (vLLM keeps its last
//   10000 batches), not from the middle; without one it starts at that batch.
// - A seq past the next one expected: it asks the replay from the next one, delivers what comes
//   in order, drops duplicates (a batch both replayed and received live) and reports what
//   the replay did not hold as a gap. Batches that arrive live meanwhile wait (at most 10000;
//   more and the replay is given up).
// - A replay silent for 2 s is given up: what it had not delivered is a gap, and its socket is
//   made anew, so a late answer cannot be taken for the next request's.
// - Without a replay endpoint a jump is only reported as a gap.
// - A feed seq not past the last one the feed brought means the publisher started over (vLLM
//   restarted, and its cache with it: a PUB never sends a seq twice): the reader starts over as
//   at its first batch, so on_batch's seq goes back, which a view takes as "the cache is new".
// - A message of the wrong shape (frame count, a seq not 8 bytes) or a payload that does not
//   decode goes to on_bad_batch; a payload's seq still counts as received.
// - On the feed, a message whose topic is not exactly `topic` (ZeroMQ subscribes by prefix) is
//   another publisher's and is ignored.
// Memory: no frame past 16 MiB is taken (ZMQ_MAXMSGSIZE: ZeroMQ drops a peer that sends one);
// ZeroMQ queues at most 1000 feed messages and 10001 replayed ones (vLLM's whole buffer and its
// end) while the reader decodes, and at most 10000 batches wait for a replay. Those counts bound
// what a hostile publisher can make us hold (count x 16 MiB), not more; vLLM's batches are KBs.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "remote/vllm_kv_events.h"

namespace pagedchat::remote {

struct VllmKvSubscription {
  std::string endpoint;          // "tcp://host:5557"
  std::string replay_endpoint;   // "tcp://host:5558", or empty: gaps are only reported
  std::string topic;             // "" subscribes to all
};

// Called on the watching thread. Any may be empty.
struct VllmKvWatchCallbacks {
  std::function<void(uint64_t seq, const VllmKvBatch&)> on_batch;  // in seq order, each seq at most once (per publisher run)
  std::function<void(uint64_t first_missed, uint64_t num_missed)> on_gap;  // batches lost for good (no replay, or replay did not have them)
  std::function<void(const std::string& sentence)> on_bad_batch;   // a payload that would not decode (skipped)
};

// Blocks until *stop is set (checked at least every 100 ms), then returns an empty string; or
// returns a sentence when an endpoint cannot be used (a malformed address, a ZeroMQ error). A
// publisher that is not there yet is not an error: ZeroMQ connects when it comes.
std::string watch_vllm_kv_events(const VllmKvSubscription& sub, const VllmKvWatchCallbacks& cb,
                                 const std::atomic<bool>* stop);

}  // namespace pagedchat::remote
