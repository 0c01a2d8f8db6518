// The disk tier's store and file format (engine/kv/disk): every damaged file is refused, never
// served; the folder stays under its cap by least recent use (a read is a use); a failed write (a
// full disk) stops writing; a killed writer's leftovers are removed at the next open; a second
// process's files are read and its removals are plain misses; the model identity tells models apart.

#include <QtTest>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/kv/disk/kv_block_file.h"
#include "engine/kv/disk/kv_disk_ledger.h"
#include "engine/kv/disk/kv_disk_store.h"
#include "engine/model/model_identity.h"
#include "engine/model/random_model.h"

using namespace pagedchat;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kNs = 0x1234;
constexpr int32_t kBlock = 4;
constexpr size_t kPayload = 256;

std::vector<int32_t> tokens_of(uint64_t i) { return {static_cast<int32_t>(i), 7, 8, static_cast<int32_t>(i * 3)}; }
std::vector<uint8_t> payload_of(uint64_t i) {
  std::vector<uint8_t> p(kPayload);
  for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<uint8_t>(i * 31 + j);
  return p;
}
size_t file_bytes() { return kv_block_file_bytes(kBlock, kPayload); }

}  // namespace

class TestKvDiskStore : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string folder(const char* name) { return (fs::path(dir_.path().toStdString()) / name).string(); }

  // Block i: hash 100 + i; its parent is block i - 1 when `chained`, else none the store knows.
  static uint64_t parentOf(uint64_t i, bool chained) { return chained ? 99 + i : 5000 + i; }
  static bool readBack(KvDiskStore& s, uint64_t i, bool chained = false) {
    std::vector<uint8_t> got;
    return s.read(100 + i, parentOf(i, chained), tokens_of(i), got) && got == payload_of(i);
  }
  static void put(KvDiskStore& s, uint64_t i, bool chained = false) {
    QVERIFY(s.write(100 + i, parentOf(i, chained), tokens_of(i), payload_of(i)));
  }

 private slots:
  void everyDamageToABlockFileIsRefused() {
    const KvBlockKey key{kNs, 5, 4};
    const std::vector<int32_t> tokens = tokens_of(1);
    const std::vector<uint8_t> file = encode_kv_block(key, tokens, payload_of(1));
    std::vector<uint8_t> out;
    QCOMPARE(decode_kv_block(file, key, tokens, out, kPayload), std::string());
    QCOMPARE(out, payload_of(1));
    for (size_t at = 0; at < file.size(); ++at) {
      for (int bit : {0, 7}) {
        std::vector<uint8_t> bad = file;
        bad[at] ^= static_cast<uint8_t>(1 << bit);
        QVERIFY2(!decode_kv_block(bad, key, tokens, out, kPayload).empty(), qPrintable(QString::number(at)));
      }
    }
    for (size_t n = 0; n < file.size(); ++n)
      QVERIFY(!decode_kv_block(std::span(file).first(n), key, tokens, out, kPayload).empty());
    std::vector<uint8_t> longer = file;
    longer.push_back(0);
    QVERIFY(!decode_kv_block(longer, key, tokens, out, kPayload).empty());
    QCOMPARE(decode_kv_block(file, {kNs + 1, 5, 4}, tokens, out, kPayload), std::string("written for another model, KV type or block size"));
    QCOMPARE(decode_kv_block(file, {kNs, 5, 3}, tokens, out, kPayload), std::string("another block of the chain"));
    QCOMPARE(decode_kv_block(file, key, tokens_of(2), out, kPayload), std::string("holds other tokens"));
    QCOMPARE(decode_kv_block(file, key, tokens, out, kPayload + 1), std::string("another block shape"));
  }

  void theCapRemovesTheLeastRecentlyUsedFirst() {
    KvDiskStore s({folder("cap"), 5 * file_bytes()}, kNs, kPayload);
    for (uint64_t i = 0; i < 5; ++i) put(s, i);
    s.flush();
    QCOMPARE(s.stats().num_files, int64_t{5});
    QVERIFY(readBack(s, 0));  // block 0 is now the most recently used
    put(s, 5);
    put(s, 6);
    s.flush();
    const KvDiskStats st = s.stats();
    QCOMPARE(st.num_files, int64_t{5});
    QCOMPARE(st.num_evicted, int64_t{2});
    QVERIFY(st.bytes <= st.max_bytes);
    QVERIFY(readBack(s, 0));
    QVERIFY(!readBack(s, 1));
    QVERIFY(!readBack(s, 2));
    for (uint64_t i : {3, 4, 5, 6}) QVERIFY(readBack(s, i));
    // A new store on the folder finds the same files, in the same order of use.
    KvDiskStore again({folder("cap"), 5 * file_bytes()}, kNs, kPayload);
    QCOMPARE(again.stats().num_files, int64_t{5});
    QCOMPARE(again.stats().num_refused, int64_t{0});
  }

  // A chain loses its tail first: its head (a shared system prompt's block, say) is what every
  // read of the chain starts with, and past a missing block nothing of it is read.
  void aChainLosesItsTailFirst() {
    KvDiskStore s({folder("chain"), 5 * file_bytes()}, kNs, kPayload);
    for (uint64_t i = 0; i < 4; ++i) put(s, i, true);  // blocks 0 -> 1 -> 2 -> 3
    s.flush();
    put(s, 10);  // unrelated, newer
    s.flush();
    put(s, 11);
    s.flush();
    QCOMPARE(s.stats().num_evicted, int64_t{1});
    QVERIFY(!readBack(s, 3, true));  // the tail went, not the head
    for (uint64_t i : {0, 1, 2}) QVERIFY(readBack(s, i, true));
    // Read again, head first, the chain is the newest: the next eviction takes the unrelated block.
    put(s, 12);
    s.flush();
    QVERIFY(!readBack(s, 10));
    for (uint64_t i : {0, 1, 2}) QVERIFY(readBack(s, i, true));
  }

  void aFailedWriteStopsWriting() {
    KvDiskStore s({folder("full"), 1 << 20}, kNs, kPayload);
    // A file size limit plays the full disk: writes past it fail (EFBIG, with SIGXFSZ ignored).
    rlimit old{};
    ::getrlimit(RLIMIT_FSIZE, &old);
    const auto previous = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 64;
    ::setrlimit(RLIMIT_FSIZE, &small);
    put(s, 0);
    s.flush();
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, previous);
    KvDiskStats st = s.stats();
    QVERIFY(!st.writing);
    QCOMPARE(st.num_written, int64_t{0});
    QCOMPARE(st.num_dropped, int64_t{1});
    QVERIFY(!readBack(s, 0));
    QVERIFY(!s.write(101, 100, tokens_of(1), payload_of(1)));  // stopped: dropped at once
    QCOMPARE(s.stats().num_dropped, int64_t{2});
    // Nothing half-written stays behind.
    for (const auto& e : fs::recursive_directory_iterator(folder("full"))) QVERIFY2(!e.is_regular_file(), e.path().c_str());
  }

  void aKilledWritersLeftoversGoAtTheNextOpen() {
    const std::string dir = folder("killed");
    { KvDiskStore s({dir, 1 << 20}, kNs, kPayload); }
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);  // its pid is now no process's
    char ns[17];
    std::snprintf(ns, sizeof ns, "%016llx", static_cast<unsigned long long>(kNs));
    const fs::path dead = fs::path(dir) / ns / ("0000000000000001." + std::to_string(child) + ".1.tmp");
    const fs::path alive = fs::path(dir) / ns / ("0000000000000002." + std::to_string(::getpid()) + ".1.tmp");
    std::ofstream(dead) << "half";
    std::ofstream(alive) << "half";
    KvDiskStore s({dir, 1 << 20}, kNs, kPayload);
    QVERIFY(!fs::exists(dead));
    QVERIFY(fs::exists(alive));  // a live writer's
    QCOMPARE(s.stats().num_files, int64_t{0});
  }

  void anotherStoresFilesAreReadAndItsRemovalsAreMisses() {
    const std::string dir = folder("shared");
    KvDiskStore reader({dir, 1 << 20}, kNs, kPayload);
    {
      KvDiskStore writer({dir, 1 << 20}, kNs, kPayload);
      put(writer, 0);
      put(writer, 1);
    }
    QVERIFY(readBack(reader, 0));  // not in its index when it opened: found on disk all the same
    char name[64];
    std::snprintf(name, sizeof name, "%016llx/%016llx.kvb", static_cast<unsigned long long>(kNs), 101ull);
    fs::remove(fs::path(dir) / name);
    QVERIFY(!readBack(reader, 1));
    QCOMPARE(reader.stats().num_refused, int64_t{0});  // gone is a miss, not damage
    // Another namespace's store does not see them.
    KvDiskStore other({dir, 1 << 20}, kNs + 1, kPayload);
    std::vector<uint8_t> got;
    QVERIFY(!other.read(100, 99, tokens_of(0), got));
  }

  // A file of the wrong length, or not a file, under a block's name is refused and removed (and
  // a FIFO does not stall the reader).
  void aWrongFileUnderABlocksNameIsRefused() {
    const std::string dir = folder("wrong");
    KvDiskStore s({dir, 1 << 20}, kNs, kPayload);
    put(s, 0);
    put(s, 1);
    s.flush();
    char name[64];
    std::snprintf(name, sizeof name, "%016llx/%016llx.kvb", static_cast<unsigned long long>(kNs), 100ull);
    const fs::path longer = fs::path(dir) / name;
    std::ofstream(longer, std::ios::app) << "more";
    QVERIFY(!readBack(s, 0));
    QVERIFY(!fs::exists(longer));
    QCOMPARE(s.stats().num_refused, int64_t{1});
    std::snprintf(name, sizeof name, "%016llx/%016llx.kvb", static_cast<unsigned long long>(kNs), 101ull);
    const fs::path fifo = fs::path(dir) / name;
    fs::remove(fifo);
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QVERIFY(!readBack(s, 1));
    QVERIFY(!fs::exists(fifo));
    QCOMPARE(s.stats().num_refused, int64_t{2});
  }

  void theModelIdentityTellsModelsApart() {
    const auto a = make_random_model("tiny", 1, 1), a2 = make_random_model("tiny", 1, 1), b = make_random_model("tiny", 2, 1);
    QCOMPARE(model_file_identity(a->weights), model_file_identity(a2->weights));
    QVERIFY(model_file_identity(a->weights) != model_file_identity(b->weights));
    QVERIFY(kv_disk_namespace(1, "cpu-hnd-f16", 16, 100) != kv_disk_namespace(1, "cpu-hnd-q8_0", 16, 100));
    QVERIFY(kv_disk_namespace(1, "cpu-hnd-f16", 16, 100) != kv_disk_namespace(1, "cpu-hnd-f16", 8, 100));
    QVERIFY(kv_disk_namespace(1, "cpu-hnd-f16", 16, 100) != kv_disk_namespace(2, "cpu-hnd-f16", 16, 100));
  }

  // The folder's ledger: a model path's identity, said changed only when it did (another path,
  // the same identity again, or a first sight are not); damaged lines are dropped; a FIFO in
  // place of a file stalls nothing; the prompt rate reads back exactly, and a bad one is none.
  void theLedgerRemembersModelsAndThePromptRate() {
    const std::string dir = folder("ledger");
    fs::create_directories(dir);
    QVERIFY(!kv_disk_record_model(dir, "/m/a.gguf", 1));  // first sight
    QVERIFY(!kv_disk_record_model(dir, "/m/a.gguf", 1));  // unchanged
    QVERIFY(!kv_disk_record_model(dir, "/m/b.gguf", 2));  // another file
    QVERIFY(kv_disk_record_model(dir, "/m/a.gguf", 3));   // a.gguf replaced
    QVERIFY(!kv_disk_record_model(dir, "/m/a.gguf", 3));  // and remembered so
    QVERIFY(!kv_disk_record_model(dir, "/m/x/../b.gguf", 2));  // the same path, written otherwise
    std::ofstream(fs::path(dir) / "models", std::ios::app) << "garbage\n0123\tshort id\n";
    QVERIFY(kv_disk_record_model(dir, "/m/b.gguf", 4));
    std::ifstream in(fs::path(dir) / "models");
    std::string all((std::istreambuf_iterator<char>(in)), {});
    QVERIFY2(all.find("garbage") == std::string::npos && all.find("short id") == std::string::npos, all.c_str());
    // A dead writer's temporary file beside it goes; a FIFO under the name is no ledger.
    const pid_t dead = fork();
    if (dead == 0) _exit(0);
    QVERIFY(dead > 0);
    waitpid(dead, nullptr, 0);
    const fs::path leftover = fs::path(dir) / ("models." + std::to_string(dead) + ".1.tmp");
    std::ofstream(leftover) << "x";
    fs::remove(fs::path(dir) / "models");
    QCOMPARE(::mkfifo((fs::path(dir) / "models").c_str(), 0600), 0);
    QVERIFY(!kv_disk_record_model(dir, "/m/a.gguf", 3));  // nothing read: first sight (the rename replaces the FIFO)
    QVERIFY(!fs::exists(leftover));
    QVERIFY(fs::is_regular_file(fs::path(dir) / "models"));

    QCOMPARE(kv_disk_load_prompt_rate(dir), 0.0);  // none saved
    kv_disk_save_prompt_rate(dir, 1.2345678901234567e11);
    QCOMPARE(kv_disk_load_prompt_rate(dir), 1.2345678901234567e11);
    kv_disk_save_prompt_rate(dir, 0);  // nothing to save: the last one stays
    QCOMPARE(kv_disk_load_prompt_rate(dir), 1.2345678901234567e11);
    for (const char* bad : {"-5\n", "nan\n", "1e300\n", "fast\n"}) {
      std::ofstream(fs::path(dir) / "prompt_rate") << bad;
      QCOMPARE(kv_disk_load_prompt_rate(dir), 0.0);
    }
    fs::remove(fs::path(dir) / "prompt_rate");
    QCOMPARE(::mkfifo((fs::path(dir) / "prompt_rate").c_str(), 0600), 0);
    QCOMPARE(kv_disk_load_prompt_rate(dir), 0.0);  // returns at once
  }
};

QTEST_APPLESS_MAIN(TestKvDiskStore)
#include "test_kv_disk_store.moc"
