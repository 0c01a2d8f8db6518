#pragma once
// vLLM's KV event publisher, played by a test on loopback (vllm/distributed/kv_events.py's wire
// format: [topic, seq 8 bytes big-endian, msgpack batch] on a PUB, replays on a ROUTER), and
// msgpack written by hand for its payloads. For the suites of remote/vllm_kv_subscriber.h and
// of the app's view of a vLLM cache (they link libzmq and msgpack-c themselves).

#include <msgpack.hpp>
#include <zmq.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote/vllm_kv_events.h"

namespace pagedchat::test::vllm {

using remote::VllmBlockHash;

// msgpack written by hand, one value after another.
class Pack {
 public:
  Pack& array(uint32_t n) { p_.pack_array(n); return *this; }
  Pack& map(uint32_t n) { p_.pack_map(n); return *this; }
  Pack& str(std::string_view s) { p_.pack_str(s.size()); p_.pack_str_body(s.data(), s.size()); return *this; }
  Pack& bin(std::string_view s) { p_.pack_bin(s.size()); p_.pack_bin_body(s.data(), s.size()); return *this; }
  Pack& i(int64_t v) { p_.pack_int64(v); return *this; }
  Pack& u(uint64_t v) { p_.pack_uint64(v); return *this; }
  Pack& f(double v) { p_.pack_double(v); return *this; }
  Pack& nil() { p_.pack_nil(); return *this; }
  Pack& ints(std::initializer_list<int64_t> vs) { array(vs.size()); for (int64_t v : vs) i(v); return *this; }
  std::string bytes() const { return std::string(buf_.data(), buf_.size()); }

 private:
  msgpack::sbuffer buf_;
  msgpack::packer<msgpack::sbuffer> p_{buf_};
};

inline VllmBlockHash intHash(uint64_t v) {
  VllmBlockHash h(1, 'i');
  for (int s = 56; s >= 0; s -= 8) h.push_back(static_cast<char>(v >> s));
  return h;
}
inline std::string bigEndian(uint64_t v) { return intHash(v).substr(1); }

// A payload of one AllBlocksCleared whose ts is `seq`: what arrives says which batch it was.
inline std::string seqPayload(uint64_t seq) {
  return Pack().map(2).str("ts").f(double(seq)).str("events").array(1).map(1).str("type").str("AllBlocksCleared").bytes();
}

// An XPUB (a PUB that shows its subscriptions, so the test publishes only once the reader is
// there: no slow-joiner sleeps) and a ROUTER answering replay requests from `buffer`.
class FakePublisher {
 public:
  FakePublisher() {
    const int linger = 0;
    pub_ = zmq_socket(ctx_, ZMQ_XPUB);
    router_ = zmq_socket(ctx_, ZMQ_ROUTER);
    const int unlimited = 0;  // a flood is queued, not dropped: the tests count every batch
    for (void* s : {pub_, router_}) {
      zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
      zmq_setsockopt(s, ZMQ_SNDHWM, &unlimited, sizeof unlimited);
    }
    zmq_bind(pub_, "tcp://127.0.0.1:*");
    zmq_bind(router_, "tcp://127.0.0.1:*");
  }
  ~FakePublisher() {
    zmq_close(pub_);
    zmq_close(router_);
    zmq_ctx_term(ctx_);
  }
  std::string endpoint() const { return lastEndpoint(pub_); }
  std::string replayEndpoint() const { return lastEndpoint(router_); }

  bool awaitSubscriber() {
    std::vector<std::string> m;
    return receive(pub_, &m, 5000) && !m[0].empty() && m[0][0] == 1;  // 1: subscribe
  }
  void send(const std::vector<std::string>& frames) { sendFrames(pub_, frames); }
  void publish(uint64_t seq) { send({"kv-events", bigEndian(seq), seqPayload(seq)}); }
  void keep(uint64_t seq) { buffer[seq] = seqPayload(seq); }
  void keepAndPublish(uint64_t seq) { keep(seq), publish(seq); }

  // The start seq of the next replay request (and who asked), or nothing within 5 s.
  std::optional<uint64_t> awaitReplayRequest(std::string* client) {
    std::vector<std::string> m;
    if (!receive(router_, &m, 5000) || m.size() != 3 || !m[1].empty() || m[2].size() != 8) return std::nullopt;
    *client = m[0];
    uint64_t from = 0;
    for (char c : m[2]) from = (from << 8) | uint8_t(c);
    return from;
  }
  // As vLLM answers: every buffered batch from `from` on, then the end marker.
  void answerReplay(const std::string& client, uint64_t from) {
    for (auto it = buffer.lower_bound(from); it != buffer.end(); ++it)
      sendFrames(router_, {client, "", bigEndian(it->first), it->second});
    sendFrames(router_, {client, "", bigEndian(~uint64_t{0}), ""});
  }

  std::map<uint64_t, std::string> buffer;  // what replay can give

 private:
  static std::string lastEndpoint(void* s) {
    char buf[256];
    size_t size = sizeof buf;
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, buf, &size);
    return buf;
  }
  static void sendFrames(void* s, const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      zmq_send(s, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
  }
  static bool receive(void* s, std::vector<std::string>* frames, int timeout_ms) {
    zmq_pollitem_t item{s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, timeout_ms) != 1) return false;
    int more = 1;
    while (more) {
      zmq_msg_t part;
      zmq_msg_init(&part);
      if (zmq_msg_recv(&part, s, 0) < 0) return false;
      frames->emplace_back(static_cast<char*>(zmq_msg_data(&part)), zmq_msg_size(&part));
      more = zmq_msg_more(&part);
      zmq_msg_close(&part);
    }
    return true;
  }

  void* ctx_ = zmq_ctx_new();
  void* pub_ = nullptr;
  void* router_ = nullptr;
};

}  // namespace pagedchat::test::vllm
