// Loading a model reports its stages in order, each from 0 to 1 without going back, and a
// cancel at any report ends the load with LoadCancelled (not an error about the file); a
// model loaded with progress computes the same logits as one loaded without.

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/forward_batch.h"
#include "engine/backend/kv_cache_shape.h"
#include "engine/model/load_progress.h"
#include "engine/model/model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

struct Recorder {
  std::vector<std::pair<std::string, double>> reports;
  LoadProgress::Listener listener() {
    return [this](std::string_view stage, double f) { reports.emplace_back(std::string(stage), f); };
  }
  // The stages in the order first seen.
  std::vector<std::string> stages() const {
    std::vector<std::string> out;
    for (const auto& [s, f] : reports)
      if (out.empty() || out.back() != s) out.push_back(s);
    return out;
  }
};

std::vector<float> logits_of(const Model& model, CpuBackend& backend) {
  KvCacheShape shape;
  shape.num_layers = model.config().num_layers;
  shape.num_kv_heads = model.config().num_kv_heads;
  shape.head_dim = model.config().head_dim;
  shape.num_blocks = 2;
  shape.block_size = 16;
  backend.allocate_kv(shape);
  const std::vector<int32_t> tokens = model.tokenizer->encode("The capital of France is", true, false);
  ForwardBatch batch;
  batch.add_sequence(tokens.data(), static_cast<int32_t>(tokens.size()), 0, {0, 1}, 16, true);
  std::vector<float> logits;
  backend.forward(batch, logits);
  return logits;
}

}  // namespace

class TestLoadProgress : public QObject {
  Q_OBJECT
  std::string m_model;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = model;
  }

  void everyStageRunsFromZeroToOneInOrder() {
    Recorder r;
    const LoadProgress progress(r.listener(), nullptr);
    auto model = Model::load(m_model, progress);
    CpuBackend backend(model->weights, 2, KvType::F16, cpu::MatmulPrecision::kQuantizedActivations, progress);
    QCOMPARE(r.stages(), (std::vector<std::string>{"reading", "tokenizer", "packing weights"}));
    for (const std::string& stage : r.stages()) {
      std::vector<double> f;
      for (const auto& [s, v] : r.reports)
        if (s == stage) f.push_back(v);
      QCOMPARE(f.front(), 0.0);
      QCOMPARE(f.back(), 1.0);
      QVERIFY2(std::is_sorted(f.begin(), f.end()), stage.c_str());
    }
    // Packing reports between batches of matrices: more than the two ends for 30 layers.
    int packing = 0;
    for (const auto& [s, v] : r.reports) packing += s == "packing weights";
    QVERIFY(packing > 2);
  }

  void aCancelAtAnyReportEndsTheLoad() {
    // Count the reports of a whole load, then cancel at each of a spread of them in turn.
    Recorder all;
    {
      const LoadProgress progress(all.listener(), nullptr);
      auto model = Model::load(m_model, progress);
      CpuBackend backend(model->weights, 2, KvType::F16, cpu::MatmulPrecision::kQuantizedActivations, progress);
    }
    const int n = static_cast<int>(all.reports.size());
    for (int at : {0, 1, n / 3, n / 2, n - 2, n - 1}) {
      std::atomic<bool> cancelled{false};
      int seen = 0;
      const LoadProgress progress([&](std::string_view, double) { cancelled = ++seen > at; }, &cancelled);
      bool threw = false;
      try {
        auto model = Model::load(m_model, progress);
        CpuBackend backend(model->weights, 2, KvType::F16, cpu::MatmulPrecision::kQuantizedActivations, progress);
      } catch (const LoadCancelled& e) {
        threw = true;
        QCOMPARE(std::string(e.what()), std::string("the load was cancelled"));
      }
      // The listener runs after the check, so the cancel set by report k stops report k + 1.
      QVERIFY2(threw == (at < n - 1), qPrintable(QStringLiteral("cancel after report %1 of %2").arg(at).arg(n)));
      QCOMPARE(seen, std::min(at + 1, n));
    }
  }

  void progressChangesNothingComputed() {
    auto plain = Model::load(m_model);
    CpuBackend plainBackend(plain->weights, 2);
    const LoadProgress progress([](std::string_view, double) {}, nullptr);
    auto watched = Model::load(m_model, progress);
    CpuBackend watchedBackend(watched->weights, 2, KvType::F16, cpu::MatmulPrecision::kQuantizedActivations, progress);
    QCOMPARE(logits_of(*watched, watchedBackend), logits_of(*plain, plainBackend));
  }
};

QTEST_APPLESS_MAIN(TestLoadProgress)
#include "test_load_progress.moc"
