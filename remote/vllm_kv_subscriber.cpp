// Reading vLLM's KV event feed over ZeroMQ (libzmq's C API): the sockets, and the sequence
// bookkeeping that turns a lossy feed plus a replay socket into batches in order, each once.
#include "remote/vllm_kv_subscriber.h"

#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <vector>

namespace pagedchat::remote {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kFeedHwm = 1000;           // feed messages ZeroMQ queues while we decode
constexpr int kReplayHwm = 10001;        // vLLM's default buffer_steps, and the end marker
constexpr int64_t kMaxMessageBytes = int64_t{16} << 20;  // the decoder's own payload limit
constexpr int kPollMs = 100;             // how often *stop is looked at, at least
constexpr auto kReplayPatience = std::chrono::seconds(2);
constexpr size_t kMaxWaiting = 10000;    // live batches held back while a replay runs
constexpr size_t kMaxFramesKept = 4;     // vLLM sends 3; more are counted, not kept
constexpr int kMaxMessagesPerRound = 64; // between looks at *stop
constexpr uint64_t kEndOfReplay = ~uint64_t{0};  // -1 as 8 bytes: vLLM's end of a replay

std::string zmq_problem() { return zmq_strerror(zmq_errno()); }

uint64_t read_big_endian(std::string_view b) {
  uint64_t v = 0;
  for (const char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

std::string big_endian_bytes(uint64_t v) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (56 - 8 * i));
  return b;
}

// One socket, closed (linger 0: nothing left unsent holds the context) when it goes.
class Socket {
 public:
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }
  void reset(void* s = nullptr) {
    if (s_ != nullptr) zmq_close(s_);
    s_ = s;
  }
  void* get() const { return s_; }

 private:
  void* s_ = nullptr;
};

// A multipart message: its first frames, and how many it had.
struct Message {
  std::vector<std::string> frames;
  size_t num_frames = 0;
};

// false when nothing is waiting on the socket.
bool receive(void* socket, Message* m) {
  m->frames.clear();
  m->num_frames = 0;
  bool more = true;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    // The rest of a multipart message is already here once its first frame is (ZeroMQ delivers
    // messages whole), so only the first read must not wait.
    if (zmq_msg_recv(&part, socket, m->num_frames == 0 ? ZMQ_DONTWAIT : 0) < 0) {
      zmq_msg_close(&part);
      return m->num_frames > 0;
    }
    if (m->frames.size() < kMaxFramesKept) m->frames.emplace_back(static_cast<const char*>(zmq_msg_data(&part)), zmq_msg_size(&part));
    ++m->num_frames;
    more = zmq_msg_more(&part) != 0;
    zmq_msg_close(&part);
  }
  return true;
}

class Watch {
 public:
  Watch(const VllmKvSubscription& sub, const VllmKvWatchCallbacks& cb) : sub_(sub), cb_(cb) {}
  ~Watch() {
    feed_.reset();
    replay_.reset();
    if (ctx_ != nullptr) zmq_ctx_term(ctx_);
  }

  std::string open() {
    ctx_ = zmq_ctx_new();
    if (ctx_ == nullptr) return "ZeroMQ could not start: " + zmq_problem();
    feed_.reset(zmq_socket(ctx_, ZMQ_SUB));
    if (feed_.get() == nullptr) return "ZeroMQ could not make a socket: " + zmq_problem();
    std::string problem = configure(feed_.get(), kFeedHwm);
    if (problem.empty() && zmq_setsockopt(feed_.get(), ZMQ_SUBSCRIBE, sub_.topic.data(), sub_.topic.size()) != 0)
      problem = "ZeroMQ would not subscribe to the topic: " + zmq_problem();
    if (problem.empty() && zmq_connect(feed_.get(), sub_.endpoint.c_str()) != 0)
      problem = "vLLM's KV events endpoint \"" + sub_.endpoint + "\" cannot be used: " + zmq_problem();
    if (problem.empty()) problem = open_replay();
    return problem;
  }

  std::string run(const std::atomic<bool>* stop) {
    while (!stop->load()) {
      int timeout_ms = kPollMs;
      if (replaying_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(replay_deadline_ - Clock::now());
        timeout_ms = std::max(0, std::min<int>(timeout_ms, static_cast<int>(left.count()) + 1));
      }
      zmq_pollitem_t items[2] = {{feed_.get(), 0, ZMQ_POLLIN, 0}, {replay_.get(), 0, ZMQ_POLLIN, 0}};
      if (zmq_poll(items, replay_.get() != nullptr ? 2 : 1, timeout_ms) < 0) {
        if (zmq_errno() == EINTR) continue;
        return "ZeroMQ stopped reading vLLM's KV events: " + zmq_problem();
      }
      Message m;
      for (int i = 0; i < kMaxMessagesPerRound && !stop->load() && receive(feed_.get(), &m); ++i) on_feed(m);
      for (int i = 0; i < kMaxMessagesPerRound && !stop->load() && replay_.get() != nullptr && receive(replay_.get(), &m); ++i)
        on_replay(m);
      if (replaying_ && Clock::now() >= replay_deadline_) end_replay(/*silent=*/true);
      if (!failure_.empty()) return failure_;
    }
    return {};
  }

 private:
  static std::string configure(void* s, int hwm) {
    const int linger = 0;
    const int64_t max_bytes = kMaxMessageBytes;
    if (zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max_bytes, sizeof max_bytes) != 0)
      return "ZeroMQ would not set a socket's options: " + zmq_problem();
    return {};
  }

  // The replay's DEALER, made anew each time a replay is given up.
  std::string open_replay() {
    replay_.reset();
    if (sub_.replay_endpoint.empty()) return {};
    replay_.reset(zmq_socket(ctx_, ZMQ_DEALER));
    if (replay_.get() == nullptr) return "ZeroMQ could not make a socket: " + zmq_problem();
    if (std::string problem = configure(replay_.get(), kReplayHwm); !problem.empty()) return problem;
    if (zmq_connect(replay_.get(), sub_.replay_endpoint.c_str()) != 0)
      return "vLLM's KV events replay endpoint \"" + sub_.replay_endpoint + "\" cannot be used: " + zmq_problem();
    return {};
  }

  void on_feed(const Message& m) {
    // ZeroMQ matches topics by prefix: "kv-events-2" is not ours when we asked for "kv-events".
    if (!sub_.topic.empty() && m.frames[0] != sub_.topic) return;
    if (m.num_frames != 3) {
      bad("a feed message of " + std::to_string(m.num_frames) + " frames; vLLM sends 3 (topic, seq, payload)");
      return;
    }
    if (m.frames[1].size() != 8) {
      bad("a feed message whose seq is " + std::to_string(m.frames[1].size()) + " bytes, not 8");
      return;
    }
    take_live(read_big_endian(m.frames[1]), m.frames[2]);
  }

  void on_replay(const Message& m) {
    if (!replaying_) return;  // nothing asked for it
    if (m.num_frames != 3 || !m.frames[0].empty() || m.frames[1].size() != 8) {
      bad("a replay message of " + std::to_string(m.num_frames) + " frames that is not [\"\", seq, payload]");
      return;
    }
    replay_deadline_ = Clock::now() + kReplayPatience;  // patience counts from its last word
    const uint64_t seq = read_big_endian(m.frames[1]);
    if (seq == kEndOfReplay) return end_replay(/*silent=*/false);
    if (seq < *next_) return;  // had it already
    if (seq > *next_) gap_to(seq);  // the publisher's buffer no longer holds those
    deliver(seq, m.frames[2]);
    deliver_waiting();
  }

  void take_live(uint64_t seq, const std::string& payload) {
    // A PUB socket sends each seq once, in order: one not past the last means a new publisher.
    if (last_live_ && seq <= *last_live_) start_over();
    last_live_ = seq;
    if (!next_) {
      if (seq > 0 && replay_.get() != nullptr) {
        // Join at the start of what the publisher still buffers, not in the middle of it.
        next_ = 0;
        hold(seq, payload);
        return ask_replay(0);
      }
      next_ = seq;
    }
    if (seq < *next_) return;  // a duplicate: replayed and live both
    if (seq == *next_) {
      deliver(seq, payload);
      return deliver_waiting();
    }
    if (replay_.get() == nullptr) {
      gap_to(seq);
      return deliver(seq, payload);
    }
    if (waiting_.size() >= kMaxWaiting) {
      end_replay(/*silent=*/true);  // the replay is not keeping up
      // What waited came before this one on the feed, so next_ is now at most seq.
      if (seq == *next_) return deliver(seq, payload);
    }
    hold(seq, payload);
    if (!replaying_) ask_replay(*next_);
  }

  // vLLM started again (and its cache with it): read its feed as from the first batch.
  void start_over() {
    next_.reset();
    waiting_.clear();
    if (replaying_) {
      replaying_ = false;
      if (std::string problem = open_replay(); !problem.empty()) failure_ = problem;
    }
  }

  void hold(uint64_t seq, const std::string& payload) { waiting_.emplace(seq, payload); }

  void ask_replay(uint64_t from) {
    const std::string from_bytes = big_endian_bytes(from);
    if (zmq_send(replay_.get(), "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) != 0 ||
        zmq_send(replay_.get(), from_bytes.data(), from_bytes.size(), ZMQ_DONTWAIT) != int(from_bytes.size())) {
      return end_replay(/*silent=*/true);  // could not ask: what waits comes after a gap
    }
    replaying_ = true;
    replay_from_ = from;
    replay_deadline_ = Clock::now() + kReplayPatience;
  }

  // The replay has given all it will (its end marker, or silence): what still waits is delivered,
  // each batch it did not give before one being a gap.
  void end_replay(bool silent) {
    replaying_ = false;
    if (silent) {
      if (std::string problem = open_replay(); !problem.empty()) failure_ = problem;
    } else if (!waiting_.empty() && waiting_.begin()->first > *next_ && *next_ > replay_from_) {
      // A batch that came on the feed while the replay ran, past a hole the replay did not
      // reach: the publisher answered from what it held then, so the hole may be newer than its
      // answer. Asked once more from the hole; a replay that then gives nothing ends in a gap.
      return ask_replay(*next_);
    }
    while (!waiting_.empty()) {
      auto first = waiting_.begin();
      const uint64_t seq = first->first;
      const std::string payload = std::move(first->second);
      waiting_.erase(first);
      if (seq < *next_) continue;
      if (seq > *next_) gap_to(seq);
      deliver(seq, payload);
    }
  }

  void deliver_waiting() {
    while (!waiting_.empty() && waiting_.begin()->first <= *next_) {
      auto first = waiting_.begin();
      if (first->first == *next_) deliver(first->first, first->second);
      waiting_.erase(first);
    }
  }

  void gap_to(uint64_t seq) {
    if (cb_.on_gap) cb_.on_gap(*next_, seq - *next_);
    next_ = seq;
  }

  void deliver(uint64_t seq, std::string_view payload) {
    next_ = seq + 1;
    VllmKvBatch batch;
    std::string error;
    if (decode_vllm_kv_batch(payload, &batch, &error)) {
      if (cb_.on_batch) cb_.on_batch(seq, batch);
    } else {
      bad("batch " + std::to_string(seq) + ": " + error);
    }
  }

  void bad(const std::string& sentence) {
    if (cb_.on_bad_batch) cb_.on_bad_batch(sentence);
  }

  const VllmKvSubscription& sub_;
  const VllmKvWatchCallbacks& cb_;
  void* ctx_ = nullptr;
  Socket feed_;
  Socket replay_;
  std::string failure_;                     // a socket that could not be made anew
  std::optional<uint64_t> next_;            // the next seq to deliver; none before the first batch
  std::optional<uint64_t> last_live_;       // the last seq the feed itself brought
  bool replaying_ = false;
  uint64_t replay_from_ = 0;  // where the replay running (or the last one) was asked from
  Clock::time_point replay_deadline_;
  std::map<uint64_t, std::string> waiting_;  // live batches past next_, held while a replay runs
};

}  // namespace

std::string watch_vllm_kv_events(const VllmKvSubscription& sub, const VllmKvWatchCallbacks& cb,
                                 const std::atomic<bool>* stop) {
  if (stop == nullptr) return "watching vLLM's KV events needs a stop flag";
  Watch watch(sub, cb);
  if (std::string problem = watch.open(); !problem.empty()) return problem;
  return watch.run(stop);
}

}  // namespace pagedchat::remote
