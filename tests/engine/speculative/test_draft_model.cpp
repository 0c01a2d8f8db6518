// A draft model as the drafter: the target drafting for itself (every draft kept) and a random
// model with the target's vocabulary (nearly every draft rejected) both leave the greedy output
// exactly the target's own, alone, batched, under preemption and as parallel samples. A draft
// model with another vocabulary is refused with a message that says so.

#include <QtTest>

#include <map>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/engine/engine.h"
#include "engine/chat/chat_model.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/speculative/draft_model_drafter.h"
#include "support/engine_run.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

const char* const kPrompts[] = {
    "Repeat this text exactly: All that glitters is not gold, and not all those who wander are lost.",
    "Write a haiku about the sea.",
    "What is a hash table?",
    "List three colours of the rainbow.",
};

struct Outcome : test::EngineRecord {
  EngineStats stats;
};

Outcome run(const Model& model, Backend& backend, const EngineConfig& config, const std::vector<Request>& requests) {
  Engine engine(model, backend, config);
  Outcome out;
  out.listen(engine);
  for (const Request& r : requests) engine.submit(r);
  test::run_to_end(engine);
  out.stats = engine.stats();
  return out;
}

}  // namespace

class TestDraftModel : public QObject {
  Q_OBJECT

  std::shared_ptr<const Model> target_, random_draft_;
  ChatModel target_chat_;  // target_ with its own chat template
  std::unique_ptr<CpuBackend> backend_;
  std::vector<Request> requests_;

  EngineConfig with_draft(std::shared_ptr<const Model> draft, int k, bool adaptive, const EngineConfig& base = {}) {
    EngineConfig c = base;
    c.drafter = std::make_shared<DraftModelDrafter>(draft, std::make_unique<CpuBackend>(draft->weights, 2), *target_, 256,
                                                    c.block_size, draft_token_cost(draft->config(), target_->config()));
    c.speculation.max_draft_tokens = k;
    c.speculation.adaptive = adaptive;
    return c;
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(reference, "PAGEDCHAT_REFERENCE_DIR");
    target_ = Model::load(path);
    target_chat_ = ChatModel(*target_, ChatModel::own_template(*target_));
    random_draft_ = Model::load(reference + "/draft_model/random_draft.gguf");
    backend_ = std::make_unique<CpuBackend>(target_->weights, 2);
    for (const char* p : kPrompts) {
      Request r;
      r.prompt = target_chat_.encode_chat({{"user", p}});
      r.params.max_tokens = 40;
      requests_.push_back(r);
    }
  }

  void selfDraftingKeepsEveryDraftAndTheOutput() {
    for (const Request& r : requests_) {
      const Outcome plain = run(*target_, *backend_, {}, {r});
      const Outcome spec = run(*target_, *backend_, with_draft(target_, 4, false), {r});
      QCOMPARE(spec.tokens, plain.tokens);
      QVERIFY(spec.stats.num_draft_tokens > 0);
      // Drafting from the same weights: every draft is the target's greedy token, but for
      // last-bit differences between a one-token pass and a multi-token one.
      QVERIFY2(spec.stats.num_accepted_tokens * 100 >= spec.stats.num_draft_tokens * 90,
               qPrintable(QString("%1 of %2").arg(spec.stats.num_accepted_tokens).arg(spec.stats.num_draft_tokens)));
      QCOMPARE(spec.stats.kv.num_used_blocks, 0);
    }
  }

  void aRandomDraftIsRejectedAndChangesNothing() {
    for (const Request& r : requests_) {
      const Outcome plain = run(*target_, *backend_, {}, {r});
      const Outcome spec = run(*target_, *backend_, with_draft(random_draft_, 3, false), {r});
      QCOMPARE(spec.tokens, plain.tokens);
      QVERIFY(spec.stats.num_draft_tokens >= 30);
      QVERIFY2(spec.stats.num_accepted_tokens * 10 <= spec.stats.num_draft_tokens,
               qPrintable(QString("%1 of %2").arg(spec.stats.num_accepted_tokens).arg(spec.stats.num_draft_tokens)));
    }
    // Adaptive: after a few rejections it stops drafting.
    const Outcome adaptive = run(*target_, *backend_, with_draft(random_draft_, 3, true), {requests_[1]});
    QVERIFY(adaptive.stats.num_draft_tokens < 20);
  }

  void batchedPreemptedAndParallel() {
    Outcome plain;
    for (size_t i = 0; i < requests_.size(); ++i)
      plain.tokens[static_cast<RequestId>(i) + 1] = run(*target_, *backend_, {}, {requests_[i]}).tokens[1];
    for (auto draft : {target_, random_draft_}) {
      QCOMPARE(run(*target_, *backend_, with_draft(draft, 3, false), requests_).tokens, plain.tokens);
      EngineConfig small;
      small.num_blocks = 12;
      const Outcome tight = run(*target_, *backend_, with_draft(draft, 3, false, small), requests_);
      QCOMPARE(tight.tokens, plain.tokens);
      QVERIFY(tight.stats.num_preempted > 0);
    }
    Request n2 = requests_[0];
    n2.n = 2;
    const Outcome plain2 = run(*target_, *backend_, {}, {n2});
    QCOMPARE(run(*target_, *backend_, with_draft(target_, 4, false), {n2}).tokens, plain2.tokens);
  }

  void sampledDraftsRepeatWithTheSeed() {
    Request r = requests_[0];
    r.params.temperature = 0.7f;
    r.params.seed = 5;
    r.params.ignore_eos = true;
    const Outcome a = run(*target_, *backend_, with_draft(target_, 4, false), {r});
    const Outcome b = run(*target_, *backend_, with_draft(target_, 4, false), {r});
    QCOMPARE(a.tokens, b.tokens);
    QCOMPARE(a.tokens.at(1).at(0).size(), size_t(40));
    QVERIFY(a.stats.num_accepted_tokens > a.stats.num_draft_tokens / 2);
  }

  void anotherVocabularyIsRefused() {
    std::shared_ptr<const Model> other = make_random_model("tiny", 1, 2);
    try {
      DraftModelDrafter d(other, std::make_unique<CpuBackend>(other->weights, 1), *target_, 16, 16, 0.1);
      QFAIL("a draft model with 512 tokens was accepted for a 49152-token target");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("vocabulary") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestDraftModel)
#include "test_draft_model.moc"
