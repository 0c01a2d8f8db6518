// Sharing is real, with the sizes users meet: a 512-token system prompt used by 8 chats at once
// is computed once (prefill tokens counted), and held once in the pool while they run (blocks
// counted, ref counts equal the chats); a later ninth chat finds it in the prefix cache.

#include <QtTest>

#include <memory>
#include <string>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

constexpr int kSystemTokens = 512;
constexpr int kBlockSize = 16;  // 512 is 32 whole blocks

const char* const kQuestions[8] = {
    "What is a hash table?", "Name a prime number.",  "Say hello in French.", "What is 2 + 2?",
    "Write one word.",       "What colour is grass?", "Count to three.",      "Who wrote Hamlet?",
};

Request chat(const std::vector<int32_t>& system, const std::vector<int32_t>& question) {
  Request r;
  r.prompt = system;
  r.prompt.insert(r.prompt.end(), question.begin(), question.end());
  r.params.max_tokens = 4;
  r.params.ignore_eos = true;
  return r;
}

}  // namespace

class TestEngineSharing : public QObject {
  Q_OBJECT

  std::unique_ptr<Model> model_;
  std::unique_ptr<CpuBackend> backend_;
  std::vector<int32_t> system_;  // exactly kSystemTokens tokens

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    backend_ = std::make_unique<CpuBackend>(model_->weights, 2);
    std::string text = "You are a careful assistant.";
    while (static_cast<int>(model_->tokenizer->encode(text, true, false).size()) < kSystemTokens)
      text += " Answer briefly and politely, check every fact twice, and say so when you do not know.";
    system_ = model_->tokenizer->encode(text, true, false);
    system_.resize(kSystemTokens);
  }

  void eight_chats_compute_the_system_prompt_once() {
    EngineConfig c;
    c.block_size = kBlockSize;
    c.max_batched_tokens = 4096;  // all 8 prompts start in one step
    Engine engine(*model_, *backend_, c);
    int64_t question_tokens = 0;
    for (const char* q : kQuestions) {
      const std::vector<int32_t> question = model_->tokenizer->encode(q, false, false);
      question_tokens += static_cast<int64_t>(question.size());
      engine.submit(chat(system_, question));
    }
    QVERIFY(engine.step());  // one step: every prompt computed, the first token of each sampled

    // The first chat computed the system prompt; the 7 others found its 32 blocks in the step.
    QCOMPARE(engine.stats().num_prefill_tokens, kSystemTokens + question_tokens);
    QCOMPARE(engine.stats().kv.prefix_hit_tokens, int64_t{7 * kSystemTokens});
    // Held once: each of the 32 system blocks is referenced by all 8 chats.
    const KvSnapshot snap = engine.snapshot();
    int shared_by_all = 0;
    for (const KvBlockInfo& b : snap.blocks) {
      if (b.ref_count == 8) {
        ++shared_by_all;
        QCOMPARE(b.owners.size(), size_t{8});
        QCOMPARE(b.num_filled, kBlockSize);
      }
    }
    QCOMPARE(shared_by_all, kSystemTokens / kBlockSize);
    QCOMPARE(engine.stats().kv.num_shared_refs, int64_t{7 * kSystemTokens / kBlockSize});
    QVERIFY(engine.kv().check_invariants().empty());

    while (engine.step()) {}
    QCOMPARE(engine.stats().kv.num_used_blocks, 0);
    // The system prompt's blocks stay cached: a ninth chat computes only its question.
    const std::vector<int32_t> question = model_->tokenizer->encode("And one more?", false, false);
    const int64_t before = engine.stats().num_prefill_tokens;
    engine.submit(chat(system_, question));
    while (engine.step()) {}
    QCOMPARE(engine.stats().num_prefill_tokens - before, static_cast<int64_t>(question.size()));
  }
};

QTEST_APPLESS_MAIN(TestEngineSharing)
#include "test_engine_sharing.moc"
