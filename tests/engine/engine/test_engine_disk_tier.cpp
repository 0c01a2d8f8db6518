// The disk tier (EngineConfig::kv_disk) on the real default model. The promise: a prompt whose
// blocks were written by another engine (a restart) is served from disk, and what follows is
// token for token what the engine computed with nothing on disk (greedy and seeded), for every KV
// element type and block size; the blocks read are not computed (the prefill counts show it). A
// block file found corrupt or truncated is removed and its tokens computed, with the same reply;
// blocks written for another KV type or block size are never read.

#include <QtTest>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/chat/chat_model.h"
#include "engine/engine/engine.h"
#include "engine/engine/prompt_rate.h"
#include "engine/engine/request_tracker.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "support/test_env.h"

using namespace pagedchat;
namespace fs = std::filesystem;

namespace {

struct Run {
  std::vector<int32_t> tokens;
  EngineStats stats;
  int num_full = 0, num_on_disk = 0;  // the pool's full blocks at the end, and those the snapshot marks on disk
};

// max_tokens tokens of `prompt`, greedy or seeded, past any end of turn.
Request ask(std::vector<int32_t> prompt, int max_tokens, bool seeded = false) {
  Request r;
  r.prompt = std::move(prompt);
  r.params.temperature = seeded ? 0.8f : 0.0f;
  r.params.seed = 11;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

void stepToEnd(Engine& engine) {
  while (engine.step()) {
    if (std::string bad = engine.kv().check_invariants(); !bad.empty()) qFatal("KV invariant broken: %s", bad.c_str());
  }
}

}  // namespace

class TestEngineDiskTier : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  std::vector<int32_t> prompt_;
  QTemporaryDir dir_;

  std::string folder(const char* name) const { return (fs::path(dir_.path().toStdString()) / name).string(); }

  // One engine's life: the prompt answered (10 tokens), then the engine ends (its queued writes done).
  Run answer(CpuBackend& backend, int block_size, const std::string& disk, bool seeded) {
    EngineConfig c;
    c.block_size = block_size;
    c.num_blocks = 2048 / block_size;
    c.max_context = 512;
    c.kv_disk.dir = disk;
    Engine engine(*model_, backend, c);
    RequestTracker tracker(engine);
    const RequestId id = engine.submit(ask(prompt_, 10, seeded));
    tracker.track(id, 1);
    stepToEnd(engine);
    RequestOutput out = tracker.take_output(id);
    if (!out.ok()) qFatal("%s", out.error.c_str());
    Run run{out.samples[0].tokens, engine.stats()};
    const KvSnapshot snap = engine.snapshot();
    for (const KvBlockInfo& b : snap.blocks) {
      run.num_full += b.has_hash && b.num_filled == snap.block_size;
      run.num_on_disk += b.on_disk;
    }
    return run;
  }

  // 128 blocks of 16, a 512-token context, the disk tier in `disk`.
  static EngineConfig smallPoolOn(const std::string& disk) {
    EngineConfig c;
    c.num_blocks = 128;
    c.max_context = 512;
    c.kv_disk.dir = disk;
    return c;
  }

  static std::vector<fs::path> blockFiles(const std::string& disk) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(disk))
      if (e.path().extension() == ".kvb") files.push_back(e.path());
    return files;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    ChatModel chat(*model_, ChatModel::own_template(*model_));
    prompt_ = chat.encode_chat({{"system", "You are a helpful assistant who answers in full sentences. You describe places "
                                           "with care: their light, their sounds, the weather around them, and the people "
                                           "who keep them, and you never invent facts about real places. When you are unsure of "
                                           "something you say so plainly, and you keep every answer to a few short paragraphs "
                                           "that a reader can follow without a map."},
                                  {"user", "Describe a lighthouse at night."}});
    QVERIFY(prompt_.size() > 64);
    QVERIFY(dir_.isValid());
  }

  void aRestartReadsThePromptFromDiskAndRepliesTheSame_data() {
    QTest::addColumn<int>("kv_type");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<bool>("seeded");
    for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0})
      for (int bs : {1, 4, 16})
        for (bool seeded : {false, true})
          QTest::addRow("%s_bs%d_%s", kv_type_name(t), bs, seeded ? "seeded" : "greedy") << static_cast<int>(t) << bs << seeded;
  }

  void aRestartReadsThePromptFromDiskAndRepliesTheSame() {
    QFETCH(int, kv_type);
    QFETCH(int, block_size);
    QFETCH(bool, seeded);
    CpuBackend backend(model_->weights, 2, static_cast<KvType>(kv_type));
    const std::string disk = folder(QTest::currentDataTag());
    const Run none = answer(backend, block_size, "", seeded);
    const Run first = answer(backend, block_size, disk, seeded);  // writes the blocks
    QCOMPARE(first.tokens, none.tokens);
    QCOMPARE(none.num_on_disk, 0);
    QVERIFY(first.num_full > 0);
    QCOMPARE(first.num_on_disk, first.num_full);  // every full block has its copy on disk, marked so
    const int64_t full = static_cast<int64_t>((prompt_.size() - 1) / block_size);
    QVERIFY(first.stats.disk_tier);
    QCOMPARE(first.stats.kv.num_disk_reads, int64_t{0});
    QVERIFY(first.stats.kv.num_disk_writes >= full);  // the prompt's, and the reply's that filled a block
    const Run second = answer(backend, block_size, disk, seeded);  // a restart: reads them
    QCOMPARE(second.tokens, none.tokens);
    QCOMPARE(second.stats.kv.num_disk_reads, full);
    QCOMPARE(second.stats.kv.disk_hit_tokens, full * block_size);
    QCOMPARE(second.stats.num_prefill_tokens, static_cast<int64_t>(prompt_.size()) - full * block_size);
    QCOMPARE(second.stats.disk.num_refused, int64_t{0});
  }

  void aDamagedBlockFileIsComputedAgain_data() {
    QTest::addColumn<bool>("truncate");
    QTest::newRow("corrupt") << false;
    QTest::newRow("truncated") << true;
  }

  void aDamagedBlockFileIsComputedAgain() {
    QFETCH(bool, truncate);
    CpuBackend backend(model_->weights, 2, KvType::F16);
    const std::string disk = folder(truncate ? "truncated" : "corrupt");
    const int bs = 16;
    const Run first = answer(backend, bs, disk, false);
    std::vector<fs::path> files = blockFiles(disk);
    QVERIFY(files.size() >= 3);
    // Damage the prompt's third block (its file is named by its hash, as the prefix cache names it).
    EngineConfig c;
    c.block_size = bs;
    c.num_blocks = 64;
    c.max_context = 512;
    Engine plain(*model_, backend, c);
    const std::vector<KvManager::ChainBlock> chain = plain.kv().chain_past_hits(prompt_, 0, 100);
    QVERIFY(chain.size() >= 3);
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.kvb", static_cast<unsigned long long>(chain[2].hash));
    const auto found = std::find_if(files.begin(), files.end(), [&](const fs::path& f) { return f.filename() == name; });
    QVERIFY(found != files.end());
    const fs::path victim = *found;
    if (truncate) {
      fs::resize_file(victim, fs::file_size(victim) / 2);
    } else {
      std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(victim) - 100));
      f.put('\x5a');
    }
    const Run second = answer(backend, bs, disk, false);
    QCOMPARE(second.tokens, first.tokens);
    const int64_t full = static_cast<int64_t>((prompt_.size() - 1) / bs);
    QCOMPARE(second.stats.kv.num_disk_reads, int64_t{2});  // the chain stops at the damaged block
    QCOMPARE(second.stats.num_prefill_tokens, static_cast<int64_t>(prompt_.size()) - 2 * bs);
    QCOMPARE(second.stats.disk.num_refused, int64_t{1});
    QVERIFY(fs::exists(victim));  // removed when refused, then written again from the recomputed block
    // A third run finds the block written again: the whole prompt from disk.
    const Run third = answer(backend, bs, disk, false);
    QCOMPARE(third.tokens, first.tokens);
    QCOMPARE(third.stats.kv.num_disk_reads, full);
  }

  // A restore while another chat decodes: its blocks are read by the store's reader thread while
  // the other chat steps on (it is admitted once they are staged), and both replies are the ones
  // each gets alone.
  void aRestoreWhileAnotherChatDecodes() {
    CpuBackend backend(model_->weights, 2, KvType::F16);
    const std::string disk = folder("beside");
    const int bs = 16;
    const Run alone = answer(backend, bs, disk, false);  // writes the prompt's blocks
    EngineConfig c;
    c.block_size = bs;
    c.num_blocks = 2048 / bs;
    c.max_context = 512;
    std::vector<int32_t> otherPrompt(prompt_.begin(), prompt_.begin() + 9);  // shares no full block with the prompt
    otherPrompt.push_back(42);
    const Request other = ask(otherPrompt, 40);
    std::vector<int32_t> otherAlone;
    {
      Engine engine(*model_, backend, c);
      RequestTracker tracker(engine);
      const RequestId id = engine.submit(other);
      tracker.track(id, 1);
      while (engine.step()) {}
      otherAlone = tracker.take_output(id).samples[0].tokens;
    }
    c.kv_disk.dir = disk;
    Engine engine(*model_, backend, c);
    RequestTracker tracker(engine);
    const RequestId first = engine.submit(other);
    tracker.track(first, 1);
    for (int i = 0; i < 4; ++i) engine.step();  // decoding now
    const RequestId second = engine.submit(ask(prompt_, 10));
    tracker.track(second, 1);
    stepToEnd(engine);
    QCOMPARE(tracker.take_output(first).samples[0].tokens, otherAlone);
    const RequestOutput restored = tracker.take_output(second);
    QCOMPARE(restored.samples[0].tokens, alone.tokens);
    const int64_t full = static_cast<int64_t>((prompt_.size() - 1) / bs);
    QCOMPARE(restored.num_disk_prompt_tokens, full * bs);
    QVERIFY(restored.disk_read_seconds > 0);
  }

  // cache_salt: a salted request's blocks chain from a root of the salt's, on disk as in memory,
  // so another salt (or none) never reads them.
  void aSaltedBlockServesOnlyItsSalt() {
    CpuBackend backend(model_->weights, 2, KvType::F16);
    EngineConfig c;
    c.block_size = 16;
    c.num_blocks = 128;
    c.max_context = 512;
    c.kv_disk.dir = folder("salted");
    auto run = [&](uint64_t salt) {
      Engine engine(*model_, backend, c);
      RequestTracker tracker(engine);
      Request r = ask(prompt_, 2);
      r.cache_salt = salt;
      const RequestId id = engine.submit(r);
      tracker.track(id, 1);
      stepToEnd(engine);
      return tracker.take_output(id).num_disk_prompt_tokens;
    };
    QCOMPARE(run(111), int64_t{0});  // writes salt 111's blocks
    QCOMPARE(run(222), int64_t{0});
    QCOMPARE(run(0), int64_t{0});
    QVERIFY(run(111) > 0);
  }

  // Two waiting prompts that start with the same blocks on disk: one reads them, the other waits
  // for that read and starts on what it staged (or the pool's copies); a third, aborted while its
  // read is under way, disturbs neither. Each reply is the one it gets alone.
  void promptsSharingAPrefixOnDiskReadItOnce() {
    CpuBackend backend(model_->weights, 2, KvType::F16);
    const std::string disk = folder("shared-prefix");
    const int bs = 16;
    const Run alone = answer(backend, bs, disk, false);  // writes the prompt's blocks
    std::vector<int32_t> longer = prompt_;
    longer.insert(longer.end(), {300, 301, 302, 303, 304});
    EngineConfig c;
    c.block_size = bs;
    c.num_blocks = 2048 / bs;
    c.max_context = 512;
    std::vector<int32_t> longerReference;
    {
      Engine engine(*model_, backend, c);
      RequestTracker tracker(engine);
      const RequestId id = engine.submit(ask(longer, 10));
      tracker.track(id, 1);
      stepToEnd(engine);
      longerReference = tracker.take_output(id).samples[0].tokens;
    }
    c.kv_disk.dir = disk;
    Engine engine(*model_, backend, c);
    RequestTracker tracker(engine);
    const RequestId a = engine.submit(ask(prompt_, 10)), b = engine.submit(ask(longer, 10)),
                    gone = engine.submit(ask(prompt_, 10));
    for (RequestId id : {a, b, gone}) tracker.track(id, 1);
    engine.abort(gone);
    stepToEnd(engine);
    QCOMPARE(tracker.take_output(a).samples[0].tokens, alone.tokens);
    QCOMPARE(tracker.take_output(b).samples[0].tokens, longerReference);
    const int64_t full = static_cast<int64_t>((prompt_.size() - 1) / bs);
    QCOMPARE(engine.stats().disk.num_read, full);  // the shared blocks' files read once
  }

  // A prompt restored from disk into a pool too small to take it whole at once: what fits is
  // read back, the rest computed, and the reply is the same.
  void aRestoreLargerThanTheFreePoolStillReplies() {
    CpuBackend backend(model_->weights, 2, KvType::F16);
    const std::string disk = folder("small-pool");
    const int bs = 4;
    const Run alone = answer(backend, bs, disk, false);
    EngineConfig c;
    c.block_size = bs;
    c.max_context = 512;
    c.num_blocks = static_cast<int32_t>(prompt_.size() / bs) + 8;  // room for one sequence, no more
    c.max_batched_tokens = 16;  // chunks of 16: the prompt cannot come in one step
    c.kv_disk.dir = disk;
    Engine engine(*model_, backend, c);
    RequestTracker tracker(engine);
    const RequestId other = engine.submit(ask({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, 30));
    tracker.track(other, 1);
    for (int i = 0; i < 3; ++i) engine.step();  // it holds blocks now
    const RequestId id = engine.submit(ask(prompt_, 10));
    tracker.track(id, 1);
    stepToEnd(engine);
    const RequestOutput out = tracker.take_output(id);
    QVERIFY2(out.ok(), out.error.c_str());
    QCOMPARE(out.samples[0].tokens, alone.tokens);
    QVERIFY(out.num_disk_prompt_tokens > 0);
  }

  // What a block's bytes are valid for names all that changes them: a LongRoPE model's K differ
  // with the context the pool is made for (its long factors past the original context), and the
  // matmul precision rounds K and V otherwise.
  void theLayoutNamesWhatChangesTheBytes() {
    std::unique_ptr<Model> m = make_random_model("tiny", 5, 1);
    m->weights.config.rope_original_context = 64;
    m->weights.rope_inv_freq_long = m->weights.rope_inv_freq;
    for (float& f : m->weights.rope_inv_freq_long) f *= 0.5f;
    const ModelConfig& mc = m->config();
    CpuBackend quantized(m->weights, 1, KvType::F16);
    quantized.allocate_kv({mc.num_layers, mc.num_kv_heads, mc.head_dim, 8, 16, 32});
    const std::string shortContext = quantized.kv_layout();
    quantized.allocate_kv({mc.num_layers, mc.num_kv_heads, mc.head_dim, 8, 16, 128});
    QVERIFY(quantized.kv_layout() != shortContext);
    quantized.allocate_kv({mc.num_layers, mc.num_kv_heads, mc.head_dim, 8, 16, 48});
    QCOMPARE(quantized.kv_layout(), shortContext);
    CpuBackend floats(m->weights, 1, KvType::F16, cpu::MatmulPrecision::kFloatActivations);
    floats.allocate_kv({mc.num_layers, mc.num_kv_heads, mc.head_dim, 8, 16, 32});
    QVERIFY(floats.kv_layout() != shortContext);
  }

  void blocksOfAnotherKvTypeOrBlockSizeAreNeverRead() {
    const std::string disk = folder("namespaces");
    CpuBackend f16(model_->weights, 2, KvType::F16);
    answer(f16, 16, disk, false);
    CpuBackend q8(model_->weights, 2, KvType::Q8_0);
    QCOMPARE(answer(q8, 16, disk, false).stats.kv.num_disk_reads, int64_t{0});
    QCOMPARE(answer(f16, 8, disk, false).stats.kv.num_disk_reads, int64_t{0});
    QVERIFY(answer(f16, 16, disk, false).stats.kv.num_disk_reads > 0);
  }

  // The prompt rate counts prompt steps only (64 tokens or more), a seeded rate moves by a
  // quarter toward a first sample, and the rate file is written when a prompt step counted, never
  // on a decode step (an open, write and rename on the step thread for each token).
  void thePromptRateIsMeasuredOnPromptStepsOnly() {
    PromptRate r;
    QVERIFY(!r.observe(PromptRate::kMinPromptTokens - 1, 1e9, 0.01));
    QVERIFY(!r.observe(512, 1e9, 0.0));
    QCOMPARE(r.flops_per_second(), 0.0);
    r.seed(100e9);
    QCOMPARE(r.flops_per_second(), 100e9);
    QVERIFY(r.observe(512, 20e9, 1.0));  // a cold first pass at 20 GFLOP/s
    QCOMPARE(r.flops_per_second(), 80e9);
    r.seed(1e9);  // a seed after a sample changes nothing
    QCOMPARE(r.flops_per_second(), 80e9);

    const std::string disk = folder("rate-writes");
    CpuBackend backend(model_->weights, 2, KvType::F16);
    Engine engine(*model_, backend, smallPoolOn(disk));
    const RequestId id = engine.submit(ask(prompt_, 24));
    Q_UNUSED(id);
    auto rateFile = [&]() -> fs::path {
      for (const auto& e : fs::recursive_directory_iterator(disk))
        if (e.path().filename() == "prompt_rate") return e.path();
      return {};
    };
    auto inode = [](const fs::path& p) {
      struct stat st{};
      return ::stat(p.c_str(), &st) == 0 ? st.st_ino : ino_t{0};
    };
    QVERIFY(engine.step());  // the prompt: counted and saved
    const fs::path file = rateFile();
    QVERIFY(!file.empty());
    const ino_t written = inode(file);
    stepToEnd(engine);  // 23 decode steps
    QCOMPARE(inode(file), written);  // replaced by a rename each time it is written: never since
  }

  // A restore says about how long the tokens it read would have taken to compute: from the
  // prompt rate the first engine measured on its own prompt and saved beside its blocks, since a
  // restarted engine has computed no prompt yet. The estimate is the model's counted FLOP of those
  // positions over that rate, attention over the positions before them included.
  void aRestoreSaysAboutWhatItSaved() {
    const std::string disk = folder("estimate");
    CpuBackend backend(model_->weights, 2, KvType::F16);
    auto run = [&](double* rate, double* estimate, double* again) {
      Engine engine(*model_, backend, smallPoolOn(disk));
      RequestTracker tracker(engine);
      const RequestId id = engine.submit(ask(prompt_, 4));
      tracker.track(id, 1);
      stepToEnd(engine);
      const RequestOutput out = tracker.take_output(id);
      QVERIFY(out.ok());
      *estimate = out.disk_prompt_seconds;
      *again = engine.prompt_seconds(static_cast<int32_t>(out.num_cached_prompt_tokens - out.num_disk_prompt_tokens),
                                     static_cast<int32_t>(out.num_disk_prompt_tokens));
      *rate = engine.prompt_seconds(0, 256);
      QVERIFY(engine.prompt_seconds(0, 0) == 0.0);
      // Later positions cost more (their attention reads more), and more tokens more.
      if (*rate > 0) {
        QVERIFY(engine.prompt_seconds(256, 64) > engine.prompt_seconds(0, 64));
        QVERIFY(engine.prompt_seconds(0, 128) > engine.prompt_seconds(0, 64));
      }
    };
    double rate1 = 0, estimate1 = 0, again1 = 0;
    run(&rate1, &estimate1, &again1);
    QVERIFY(rate1 > 0);           // the first engine measured its prompt (one step of > 64 tokens)
    QCOMPARE(estimate1, 0.0);     // and read nothing from disk
    std::vector<fs::path> rates;
    for (const auto& e : fs::recursive_directory_iterator(disk))
      if (e.path().filename() == "prompt_rate") rates.push_back(e.path());
    QCOMPARE(rates.size(), size_t{1});
    double rate2 = 0, estimate2 = 0, again2 = 0;
    run(&rate2, &estimate2, &again2);
    QVERIFY(estimate2 > 0);
    QCOMPARE(estimate2, again2);  // the event's figure is the engine's estimate of those positions
    QCOMPARE(rate2, rate1);       // the saved rate, as the first engine measured it (the rest it computed is under 64 tokens)
    // A damaged rate file is no rate: the restore says nothing of what it saved.
    std::ofstream(rates[0]) << "not a number\n";
    double rate3 = 0, estimate3 = 0, again3 = 0;
    run(&rate3, &estimate3, &again3);
    QCOMPARE(estimate3, 0.0);
    QCOMPARE(rate3, 0.0);
  }
};

QTEST_APPLESS_MAIN(TestEngineDiskTier)
#include "test_engine_disk_tier.moc"
