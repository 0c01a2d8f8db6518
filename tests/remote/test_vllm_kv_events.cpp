// vLLM's KV cache events: payloads msgspec itself encoded (tests/data/vllm_kv_events) decode to
// the values their README lists; both layouts hand-built; hostile payloads refused fast, and
// mutations never crash; and the ZeroMQ reader against a publisher this suite plays on loopback.

#include <QtTest>

#include <msgpack.hpp>
#include <zmq.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "remote/vllm_kv_events.h"
#include "remote/vllm_kv_subscriber.h"
#include "support/vllm_fake_publisher.h"

using namespace pagedchat::remote;
using namespace pagedchat::test::vllm;
using Clock = std::chrono::steady_clock;

namespace {

// ---- payloads ------------------------------------------------------------------------------------

VllmBlockHash bytesHash(std::string_view b) { return 'b' + std::string(b); }
VllmBlockHash shaHash(const char* text) {
  const QByteArray d = QCryptographicHash::hash(QByteArray(text), QCryptographicHash::Sha256);
  return bytesHash(std::string_view(d.constData(), d.size()));
}
std::vector<int64_t> range(int64_t from, int64_t to) {  // [from, to]
  std::vector<int64_t> v;
  for (int64_t t = from; t <= to; ++t) v.push_back(t);
  return v;
}

std::string golden(const char* name) {
  QFile f(qEnvironmentVariable("PAGEDCHAT_TEST_DATA") + "/vllm_kv_events/" + name);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray b = f.readAll();
  return std::string(b.constData(), b.size());
}

std::string decodeError(const std::string& payload) {
  VllmKvBatch b;
  std::string error;
  if (decode_vllm_kv_batch(payload, &b, &error)) return "(decoded)";
  if (!b.events.empty() || b.ts != 0) return "(failed, but left values in the batch)";
  return error;
}

// ---- vLLM's publisher, played by the test: tests/support/vllm_fake_publisher.h -------------------

// watch_vllm_kv_events on a thread of its own, recording what it reports.
class Watcher {
 public:
  explicit Watcher(VllmKvSubscription sub) : sub_(std::move(sub)) {
    cb_.on_batch = [this](uint64_t seq, const VllmKvBatch& b) {
      record([&] {
        seqs.push_back(seq);
        if (b.ts != double(seq)) mismatched = true;  // a batch delivered under another's seq
      });
    };
    cb_.on_gap = [this](uint64_t first, uint64_t n) { record([&] { gaps.emplace_back(first, n); }); };
    cb_.on_bad_batch = [this](const std::string& s) { record([&] { bad.push_back(s); }); };
    thread_ = std::thread([this] { result_ = watch_vllm_kv_events(sub_, cb_, &stop_); });
  }
  ~Watcher() { stopAndJoin(); }

  // Waits (up to 8 s) until `done` holds for what was recorded.
  bool waitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mu);
    return changed_.wait_for(lock, std::chrono::seconds(8), done);
  }
  std::chrono::milliseconds stopAndJoin() {
    const auto start = Clock::now();
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }
  const std::string& result() const { return result_; }

  std::mutex mu;  // guards what follows
  std::vector<uint64_t> seqs;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  std::vector<std::string> bad;
  bool mismatched = false;

 private:
  void record(const std::function<void()>& f) {
    {
      std::lock_guard lock(mu);
      f();
    }
    changed_.notify_all();
  }
  VllmKvSubscription sub_;
  VllmKvWatchCallbacks cb_;
  std::atomic<bool> stop_{false};
  std::condition_variable changed_;
  std::string result_;
  std::thread thread_;
};

std::vector<uint64_t> seqRange(uint64_t from, uint64_t to) {  // [from, to]
  std::vector<uint64_t> v;
  for (uint64_t s = from; s <= to; ++s) v.push_back(s);
  return v;
}
using Gaps = std::vector<std::pair<uint64_t, uint64_t>>;

}  // namespace

#define DECODE(payload, batch)                                   \
  do {                                                           \
    std::string decode_error;                                    \
    const bool decoded = decode_vllm_kv_batch(payload, &batch, &decode_error); \
    QVERIFY2(decoded, decode_error.c_str());                     \
  } while (0)

class TestVllmKvEvents : public QObject {
  Q_OBJECT
 private slots:
  // ---- golden payloads: each field as tests/data/vllm_kv_events/README.md lists it -------------
  void goldenOldestLayout() {
    const std::string payload = golden("oldest_layout.msgpack");
    QCOMPARE(payload.size(), size_t(94));
    VllmKvBatch b;
    DECODE(payload, b);
    QCOMPARE(b.ts, 1718000000.5);
    QCOMPARE(b.data_parallel_rank, -1);
    QCOMPARE(b.num_unknown_events, 0);
    QCOMPARE(b.events.size(), size_t(3));
    const VllmKvEvent& s = b.events[0];
    QCOMPARE(s.kind, VllmKvEventKind::block_stored);
    QCOMPARE(s.block_hashes, (std::vector{intHash(0x9e3779b97f4a7c15), intHash(0x8000000000000001), intHash(42)}));
    QVERIFY(!s.parent_block_hash);
    QCOMPARE(s.token_ids, range(1, 12));
    QCOMPARE(s.block_size, 4);
    QVERIFY(!s.lora_id);
    QCOMPARE(s.medium, std::string());
    QCOMPARE(s.lora_name, std::string());
    QCOMPARE(s.group_idx, -1);
    QCOMPARE(b.events[1].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[1].block_hashes, std::vector{intHash(42)});
    QCOMPARE(b.events[1].medium, std::string());
    QCOMPARE(b.events[2].kind, VllmKvEventKind::all_blocks_cleared);
    QVERIFY(b.events[2].block_hashes.empty());
  }

  void goldenOldLayout() {
    VllmKvBatch b;
    DECODE(golden("old_layout.msgpack"), b);
    QCOMPARE(b.ts, 1718000001.25);
    QCOMPARE(b.data_parallel_rank, 1);
    QCOMPARE(b.events.size(), size_t(3));
    const VllmKvEvent& s = b.events[0];
    QCOMPARE(s.kind, VllmKvEventKind::block_stored);
    QCOMPARE(s.block_hashes, (std::vector{intHash(1001), intHash(1002)}));
    QCOMPARE(s.parent_block_hash, std::optional(intHash(1000)));
    QCOMPARE(s.token_ids, range(100, 131));
    QCOMPARE(s.block_size, 16);
    QCOMPARE(s.lora_id, std::optional<int64_t>(3));
    QCOMPARE(s.medium, std::string("GPU"));
    QCOMPARE(s.lora_name, std::string());
    QCOMPARE(s.group_idx, -1);
    QCOMPARE(b.events[1].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[1].block_hashes, std::vector{intHash(1000)});
    QCOMPARE(b.events[1].medium, std::string("CPU"));
    QCOMPARE(b.events[1].group_idx, -1);
    QCOMPARE(b.events[2].kind, VllmKvEventKind::all_blocks_cleared);
  }

  void goldenNewLayout() {
    VllmKvBatch b;
    DECODE(golden("new_layout.msgpack"), b);
    QCOMPARE(b.ts, 1718000002.75);
    QCOMPARE(b.data_parallel_rank, -1);
    QCOMPARE(b.num_unknown_events, 0);
    QCOMPARE(b.events.size(), size_t(5));
    const VllmKvEvent& s = b.events[0];
    QCOMPARE(s.kind, VllmKvEventKind::block_stored);
    QCOMPARE(s.block_hashes, (std::vector{shaHash("block-1"), shaHash("block-2")}));
    QCOMPARE(vllm_hash_text(s.block_hashes[0]), std::string("89a1a98e709fa672\xE2\x80\xA6"));
    QCOMPARE(s.parent_block_hash, std::optional(shaHash("block-0")));
    QCOMPARE(s.token_ids, range(200, 231));
    QCOMPARE(s.block_size, 16);
    QVERIFY(!s.lora_id);
    QCOMPARE(s.medium, std::string("GPU"));
    QCOMPARE(s.lora_name, std::string());
    QCOMPARE(s.group_idx, -1);
    const VllmKvEvent& s2 = b.events[1];
    QCOMPARE(s2.kind, VllmKvEventKind::block_stored);
    QCOMPARE(s2.block_hashes, std::vector{shaHash("block-3")});
    QVERIFY(!s2.parent_block_hash);
    QCOMPARE(s2.token_ids, range(300, 315));
    QCOMPARE(s2.block_size, 16);
    QCOMPARE(s2.lora_id, std::optional<int64_t>(7));
    QCOMPARE(s2.medium, std::string("CPU"));
    QCOMPARE(s2.lora_name, std::string("sql-adapter"));
    QCOMPARE(s2.group_idx, 1);
    QCOMPARE(b.events[2].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[2].block_hashes, std::vector{shaHash("block-1")});
    QCOMPARE(b.events[2].medium, std::string("GPU"));
    QCOMPARE(b.events[2].group_idx, 1);
    QCOMPARE(b.events[3].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[3].block_hashes, std::vector{shaHash("block-3")});
    QCOMPARE(b.events[3].medium, std::string());
    QCOMPARE(b.events[3].group_idx, -1);
    QCOMPARE(b.events[4].kind, VllmKvEventKind::all_blocks_cleared);
  }

  void goldenUnknownEventIsSkippedAndCounted() {
    VllmKvBatch b;
    DECODE(golden("unknown_event.msgpack"), b);
    QCOMPARE(b.ts, 1718000003.0);
    QCOMPARE(b.data_parallel_rank, 2);
    QCOMPARE(b.num_unknown_events, 1);
    QCOMPARE(b.events.size(), size_t(2));
    QCOMPARE(b.events[0].kind, VllmKvEventKind::block_stored);
    QCOMPARE(b.events[0].block_hashes, std::vector{intHash(5)});
    QCOMPARE(b.events[0].parent_block_hash, std::optional(intHash(4)));
    QCOMPARE(b.events[0].token_ids, range(400, 415));
    QCOMPARE(b.events[0].block_size, 16);
    QCOMPARE(b.events[0].medium, std::string("GPU"));
    QCOMPARE(b.events[1].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[1].block_hashes, std::vector{intHash(5)});
    QCOMPARE(b.events[1].medium, std::string("GPU"));
  }

  // ---- hand-built -------------------------------------------------------------------------------
  void positionalLayoutWithMissingAndExtraTrailingFields() {
    Pack p;
    p.array(3).i(1718000000);  // ts as an integer
    p.array(3);
    // Only the four fields vLLM always sent; 10 token ids for 3 blocks of 4 (fewer are kept).
    p.array(5).str("BlockStored");
    p.array(4).i(-1).u(~uint64_t{0}).u(uint64_t{1} << 63).i(std::numeric_limits<int64_t>::min());
    p.i(-5).ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}).i(4);
    // Every field of today's BlockStored, then two a later vLLM might add.
    p.array(14).str("BlockStored").ints({7}).i(6).ints({1, 2}).i(2).i(9).str("CPU").str("lora-x");
    p.array(1).str("extra").i(3).str("full_attention").nil().str("later").i(12345);
    p.array(2).str("BlockRemoved").ints({7});
    p.nil();  // data_parallel_rank
    VllmKvBatch b;
    DECODE(p.bytes(), b);
    QCOMPARE(b.ts, 1718000000.0);
    QCOMPARE(b.data_parallel_rank, -1);
    QCOMPARE(b.events.size(), size_t(3));
    const VllmKvEvent& s = b.events[0];
    // -1 and 2^64-1 are one 64-bit value, as are INT64_MIN and 2^63.
    QCOMPARE(s.block_hashes, (std::vector{intHash(~uint64_t{0}), intHash(~uint64_t{0}), intHash(uint64_t{1} << 63),
                                          intHash(uint64_t{1} << 63)}));
    QCOMPARE(s.parent_block_hash, std::optional(intHash(uint64_t(-5))));
    QCOMPARE(s.token_ids, range(0, 9));
    QCOMPARE(s.block_size, 4);
    QVERIFY(!s.lora_id);
    QCOMPARE(s.medium, std::string());
    QCOMPARE(s.group_idx, -1);
    const VllmKvEvent& s2 = b.events[1];
    QCOMPARE(s2.block_hashes, std::vector{intHash(7)});
    QCOMPARE(s2.parent_block_hash, std::optional(intHash(6)));
    QCOMPARE(s2.token_ids, (std::vector<int64_t>{1, 2}));
    QCOMPARE(s2.block_size, 2);
    QCOMPARE(s2.lora_id, std::optional<int64_t>(9));
    QCOMPARE(s2.medium, std::string("CPU"));
    QCOMPARE(s2.lora_name, std::string("lora-x"));
    QCOMPARE(s2.group_idx, 3);
    QCOMPARE(b.events[2].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[2].block_hashes, std::vector{intHash(7)});
  }

  void mapLayoutWithUnknownAndOmittedFields() {
    Pack p;
    p.map(4).str("future").map(1).str("x").ints({1, 2}).str("ts").i(5).str("data_parallel_rank").i(0);
    p.str("events").array(3);
    p.map(5).str("type").str("BlockStored").str("block_hashes").array(2).str("abc").bin("abc");
    p.str("token_ids").array(0).str("block_size").i(16).str("unknown_field").f(1.5);
    p.map(2).str("block_hashes").ints({1}).str("type").str("BlockRemoved");  // the tag need not come first
    p.map(2).str("type").str("AllBlocksCleared").str("extra").nil();
    VllmKvBatch b;
    DECODE(p.bytes(), b);
    QCOMPARE(b.ts, 5.0);
    QCOMPARE(b.data_parallel_rank, 0);
    QCOMPARE(b.events.size(), size_t(3));
    QCOMPARE(b.events[0].block_hashes, (std::vector{bytesHash("abc"), bytesHash("abc")}));  // str and bin alike
    QVERIFY(!b.events[0].parent_block_hash);
    QVERIFY(b.events[0].token_ids.empty());
    QCOMPARE(b.events[0].block_size, 16);
    QCOMPARE(b.events[1].kind, VllmKvEventKind::block_removed);
    QCOMPARE(b.events[1].block_hashes, std::vector{intHash(1)});
    QCOMPARE(b.events[2].kind, VllmKvEventKind::all_blocks_cleared);
  }

  void positionalBatchOfMapEvents() {
    Pack p;
    p.array(3).f(2.5).array(1).map(3).str("type").str("BlockRemoved").str("block_hashes").ints({3}).str("medium").str("CPU");
    p.i(4);
    VllmKvBatch b;
    DECODE(p.bytes(), b);
    QCOMPARE(b.data_parallel_rank, 4);
    QCOMPARE(b.events.size(), size_t(1));
    QCOMPARE(b.events[0].medium, std::string("CPU"));
  }

  void hashText() {
    QCOMPARE(vllm_hash_text(intHash(0x3fa2c0de11223344)), std::string("3fa2c0de11223344"));
    QCOMPARE(vllm_hash_text(bytesHash("\x01\x02")), std::string("0102"));
    QCOMPARE(vllm_hash_text(bytesHash("12345678")), std::string("3132333435363738"));
    QCOMPARE(vllm_hash_text(bytesHash("123456789")), std::string("3132333435363738\xE2\x80\xA6"));
    QCOMPARE(vllm_hash_text("x"), std::string());
    QCOMPARE(vllm_hash_text("i12"), std::string());
  }

  // ---- refused, each with a sentence naming what is wrong ---------------------------------------
  void refusesWhatIsNotABatch() {
    auto stored = [](auto fields) {  // a map-layout batch of one BlockStored with these fields
      Pack p;
      p.map(2).str("ts").f(1).str("events").array(1);
      fields(p);
      return p.bytes();
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "the payload is empty"},
        {"\xc1", "0xc1"},
        {golden("old_layout.msgpack").substr(0, 100), "ends inside a value"},
        {golden("old_layout.msgpack") + '\0', "1 bytes after its batch"},
        {Pack().str("hello").bytes(), "the batch must be an array or a map, not a string"},
        {Pack().array(1).f(1).bytes(), "it needs ts and events"},
        {Pack().array(2).str("x").array(0).bytes(), "ts must be a number, not a string"},
        {Pack().array(2).f(1).str("x").bytes(), "events must be an array, not a string"},
        {Pack().map(1).str("ts").f(1).bytes(), "the batch has no events"},
        {Pack().array(3).f(1).array(0).i(-1).bytes(), "data_parallel_rank is -1"},
        {Pack().array(2).f(1).array(1).i(5).bytes(), "event 0 must be an array or a map, not an integer"},
        {Pack().array(2).f(1).array(1).array(0).bytes(), "event 0 is an empty array"},
        {Pack().array(2).f(1).array(1).array(1).i(3).bytes(), "event 0's type must be a string, not an integer"},
        {Pack().array(2).f(1).array(1).map(1).str("x").i(1).bytes(), "event 0 has no \"type\""},
        {Pack().array(2).f(1).array(1).array(3).str("BlockStored").ints({1}).nil().bytes(), "has 2 fields; it needs at least 4"},
        {stored([](Pack& p) { p.map(3).str("type").str("BlockStored").str("block_hashes").ints({1}).str("token_ids").ints({}); }),
         "event 0 (BlockStored) has no block_size"},
        {stored([](Pack& p) { p.map(2).str("type").str("BlockStored").str("block_hashes").array(1).f(1.5); }),
         "event 0 (BlockStored): block_hashes[0] must be bytes or an integer, not a float"},
        {stored([](Pack& p) { p.map(2).str("type").str("BlockRemoved").str("block_hashes").str("x"); }),
         "event 0 (BlockRemoved): block_hashes must be an array, not a string"},
        {stored([](Pack& p) {
           p.map(4).str("type").str("BlockStored").str("block_hashes").ints({1}).str("token_ids").ints({}).str("block_size").i(0);
         }),
         "event 0 (BlockStored): block_size is 0; it must be 1..65536"},
        {stored([](Pack& p) {
           p.map(4).str("type").str("BlockStored").str("block_hashes").ints({1, 2}).str("token_ids").ints({1, 2, 3, 4, 5});
           p.str("block_size").i(2);
         }),
         "event 0 (BlockStored) has 5 token_ids, more than its 2 blocks of 2 hold"},
        {stored([](Pack& p) {
           p.map(4).str("type").str("BlockStored").str("block_hashes").ints({1}).str("block_size").i(2);
           p.str("token_ids").array(2).i(1).str("2");
         }),
         "event 0 (BlockStored): token_ids[1] must be an integer, not a string"},
        {stored([](Pack& p) {
           p.map(5).str("type").str("BlockStored").str("block_hashes").ints({1}).str("block_size").i(2);
           p.str("token_ids").ints({}).str("lora_id").str("x");
         }),
         "event 0 (BlockStored): lora_id must be an integer, not a string"},
        {stored([](Pack& p) { p.map(3).str("type").str("BlockRemoved").str("block_hashes").ints({1}).str("medium").i(1); }),
         "event 0 (BlockRemoved): medium must be a string or nil, not an integer"},
    };
    for (const auto& [payload, expected] : cases) {
      const std::string error = decodeError(payload);
      QVERIFY2(error.find(expected) != std::string::npos, ("wanted \"" + expected + "\", got \"" + error + "\"").c_str());
    }
  }

  void refusesHostileSizesFast() {
    const auto start = Clock::now();
    // Five bytes that claim 2^31 elements (msgpack-c would ask for 48 GiB before reading one).
    QCOMPARE(decodeError(std::string("\xdd\x80\x00\x00\x00", 5)),
             std::string("the payload declares an array of 2147483648 elements in 0 bytes"));
    QCOMPARE(decodeError(std::string("\xdf\xff\xff\xff\xff", 5)),
             std::string("the payload declares a map of 4294967295 entries in 0 bytes"));
    QCOMPARE(decodeError(std::string("\x92\xcb", 2) + std::string(8, '\0') + std::string("\xdd\x7f\xff\xff\xff", 5) + "\xc0"),
             std::string("the payload declares an array of 2147483647 elements in 1 bytes"));
    QCOMPARE(decodeError(std::string("\xc6\xff\xff\xff\xff", 5)), std::string("the payload ends inside a value (at byte 5)"));
    QCOMPARE(decodeError(std::string(40, '\x91') + "\xc0"), std::string("the payload nests deeper than 16 levels"));
    QVERIFY(Clock::now() - start < std::chrono::seconds(1));

    QVERIFY(decodeError(std::string((size_t{16} << 20) + 1, '\0')).find("16777217 bytes, more than 16777216") != std::string::npos);
    Pack many;
    many.array(2).f(1).array(65537);
    for (int i = 0; i < 65537; ++i) many.array(1).str("AllBlocksCleared");
    QCOMPARE(decodeError(many.bytes()), std::string("the batch has 65537 events, more than 65536"));
    Pack hashes;
    hashes.array(2).f(1).array(1).array(2).str("BlockRemoved").array((1 << 20) + 1);
    for (int i = 0; i < (1 << 20) + 1; ++i) hashes.i(1);
    QCOMPARE(decodeError(hashes.bytes()), std::string("event 0 (BlockRemoved): block_hashes has 1048577 elements, more than 1048576"));
  }

  void mutationsNeverCrash() {
    const std::vector<std::string> seeds = {golden("oldest_layout.msgpack"), golden("old_layout.msgpack"),
                                            golden("new_layout.msgpack"), golden("unknown_event.msgpack")};
    std::mt19937 rng(20240607);
    auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    int decoded = 0;
    for (int round = 0; round < 2500; ++round) {
      std::string p;
      if (round < 2000) {  // a golden payload, changed in a few places
        p = seeds[below(seeds.size())];
        for (size_t n = 1 + below(6); n > 0 && !p.empty(); --n) {
          const size_t at = below(p.size());
          switch (below(5)) {
            case 0: p[at] = char(below(256)); break;
            case 1: p.insert(p.begin() + at, char(below(256))); break;
            case 2: p.erase(at, 1 + below(4)); break;
            case 3: p.resize(at); break;
            default: p[at] = "\xdd\xdf\xc6\xcf\xd3\xc0\x91\xcb"[below(8)]; break;  // headers that claim much
          }
        }
      } else {  // bytes, any
        p.resize(below(300));
        for (char& c : p) c = char(below(256));
      }
      VllmKvBatch b;
      std::string error;
      if (decode_vllm_kv_batch(p, &b, &error)) {
        ++decoded;
        QVERIFY(b.events.size() <= 65536);
      } else {
        QVERIFY(!error.empty());
      }
    }
    QVERIFY(decoded > 0);  // some mutations keep a batch: the checks after the bounds walk run too
  }

  // ---- the ZeroMQ reader ------------------------------------------------------------------------
  void readsTheFeedInOrderAndFillsGapsFromReplay() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), pub.replayEndpoint(), "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    for (uint64_t s = 0; s <= 9; ++s) pub.keepAndPublish(s);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 10; }));
    QCOMPARE(w.seqs, seqRange(0, 9));

    // 10..12 lost on the feed but buffered: the reader asks from 10 and gets each once.
    pub.keep(10), pub.keep(11), pub.keep(12);
    pub.keepAndPublish(13);
    std::string client;
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(10));
    pub.answerReplay(client, 10);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 14; }));

    // 14 and 15 lost for good: the replay answers only its end marker.
    pub.publish(16);
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(14));
    pub.answerReplay(client, 100);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 15; }));

    // Malformed messages, another topic, and a payload that will not decode.
    pub.send({"kv-events", bigEndian(17)});
    pub.send({"kv-events", "abc", seqPayload(17)});
    pub.send({"kv-events-2", bigEndian(90), seqPayload(90)});  // a prefix match, not our topic
    pub.send({"kv-events", bigEndian(17), "\xc1"});
    pub.publish(18);
    QVERIFY(w.waitFor([&] { return !w.seqs.empty() && w.seqs.back() == 18; }));
    {
      std::lock_guard lock(w.mu);
      std::vector<uint64_t> want = seqRange(0, 13);
      want.push_back(16);
      want.push_back(18);
      QCOMPARE(w.seqs, want);
      QCOMPARE(w.gaps, (Gaps{{14, 2}}));
      QVERIFY(!w.mismatched);
      QCOMPARE(w.bad.size(), size_t(3));
      QCOMPARE(w.bad[0], std::string("a feed message of 2 frames; vLLM sends 3 (topic, seq, payload)"));
      QCOMPARE(w.bad[1], std::string("a feed message whose seq is 3 bytes, not 8"));
      QVERIFY2(w.bad[2].rfind("batch 17: ", 0) == 0, w.bad[2].c_str());
    }
    QVERIFY(w.stopAndJoin() < std::chrono::milliseconds(300));
    QCOMPARE(w.result(), std::string());
  }

  // A batch past a hole that comes on the feed while a replay runs: the replay was answered from
  // what the publisher held before it, so the hole is asked for once more, and a replay that
  // gives nothing then ends in a gap (not a second ask).
  void aHoleNewerThanTheReplayIsAskedForAgain() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), pub.replayEndpoint(), "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    pub.keepAndPublish(0);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 1; }));
    pub.keep(1);
    pub.keepAndPublish(2);
    std::string client;
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(1));
    pub.publish(5);  // 3 and 4 lost on the feed, after the replay's answer was made
    QTest::qWait(200);  // the reader holds 5 before the answer comes
    pub.answerReplay(client, 1);
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(3));
    pub.answerReplay(client, 100);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 4; }));
    std::lock_guard lock(w.mu);
    QCOMPARE(w.seqs, (std::vector<uint64_t>{0, 1, 2, 5}));
    QCOMPARE(w.gaps, (Gaps{{3, 2}}));
  }

  void joiningLateReplaysWhatThePublisherStillHas() {
    FakePublisher pub;
    for (uint64_t s = 2; s <= 4; ++s) pub.keep(s);  // 0 and 1 already dropped from its buffer
    Watcher w({pub.endpoint(), pub.replayEndpoint(), "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    pub.keepAndPublish(5);
    std::string client;
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(0));
    pub.answerReplay(client, 0);
    pub.publish(6);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 5; }));
    std::lock_guard lock(w.mu);
    QCOMPARE(w.seqs, seqRange(2, 6));
    QCOMPARE(w.gaps, (Gaps{{0, 2}}));
  }

  void aSilentReplayIsGivenUp() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), pub.replayEndpoint(), ""});
    QVERIFY(pub.awaitSubscriber());
    pub.publish(0);
    pub.publish(3);
    std::string first_client;
    QCOMPARE(pub.awaitReplayRequest(&first_client), std::optional<uint64_t>(1));
    const auto asked = Clock::now();  // and never answered
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 2; }));
    QVERIFY(Clock::now() - asked > std::chrono::milliseconds(1500));
    // The next replay comes from a socket made anew, and is used.
    pub.keep(4);
    pub.keepAndPublish(5);
    std::string second_client;
    QCOMPARE(pub.awaitReplayRequest(&second_client), std::optional<uint64_t>(4));
    QVERIFY(second_client != first_client);
    pub.answerReplay(second_client, 4);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 4; }));
    std::lock_guard lock(w.mu);
    QCOMPARE(w.seqs, (std::vector<uint64_t>{0, 3, 4, 5}));
    QCOMPARE(w.gaps, (Gaps{{1, 2}}));
  }

  void aFloodWhileReplayingIsDeliveredNotHeld() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), pub.replayEndpoint(), "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    pub.publish(0);
    for (uint64_t s = 2; s <= 12000; ++s) pub.publish(s);  // 1 lost; the replay will not answer
    std::string client;
    QCOMPARE(pub.awaitReplayRequest(&client), std::optional<uint64_t>(1));
    // Past 10000 held batches (or 2 s of silence) the replay is given up and all of them delivered.
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 12000; }));
    std::lock_guard lock(w.mu);
    std::vector<uint64_t> want = seqRange(2, 12000);
    want.insert(want.begin(), 0);
    QCOMPARE(w.seqs, want);
    QCOMPARE(w.gaps, (Gaps{{1, 1}}));
  }

  void withoutReplayJumpsAreGaps() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), "", "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    pub.publish(7);  // the first batch seen is the start: no gap before it
    pub.publish(10);
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 2; }));
    std::lock_guard lock(w.mu);
    QCOMPARE(w.seqs, (std::vector<uint64_t>{7, 10}));
    QCOMPARE(w.gaps, (Gaps{{8, 2}}));
  }

  void aPublisherThatStartsOverIsFollowed() {
    FakePublisher pub;
    Watcher w({pub.endpoint(), pub.replayEndpoint(), "kv-events"});
    QVERIFY(pub.awaitSubscriber());
    for (uint64_t s : {0, 1, 2, 0, 1}) pub.publish(s);  // vLLM restarted after 2
    QVERIFY(w.waitFor([&] { return w.seqs.size() == 5; }));
    std::lock_guard lock(w.mu);
    QCOMPARE(w.seqs, (std::vector<uint64_t>{0, 1, 2, 0, 1}));
    QVERIFY(w.gaps.empty());
  }

  void aMalformedEndpointIsASentence() {
    std::atomic<bool> stop{false};
    const std::string feed = watch_vllm_kv_events({"not-an-endpoint", "", ""}, {}, &stop);
    QVERIFY2(feed.find("\"not-an-endpoint\" cannot be used") != std::string::npos, feed.c_str());
    const std::string replay = watch_vllm_kv_events({"tcp://127.0.0.1:5557", "tcp://127.0.0.1:port", ""}, {}, &stop);
    QVERIFY2(replay.find("replay endpoint \"tcp://127.0.0.1:port\" cannot be used") != std::string::npos, replay.c_str());
  }
};

QTEST_APPLESS_MAIN(TestVllmKvEvents)
#include "test_vllm_kv_events.moc"
