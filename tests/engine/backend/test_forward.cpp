// The CPU forward pass against an independent reference: tests/reference/llama_ref.py, a
// NumPy float64 Llama forward that dequantizes with the `gguf` package. For several prompts
// the last position's logits agree within a stated tolerance, every position's top-1 agrees
// wherever the reference's top-2 gap exceeds that tolerance, and 32 greedy tokens match.

#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/request_runner.h"
#include "engine/model/model.h"
#include "support/json_values.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {
// f32 activations: float32 accumulation over 30 layers against float64; measured below 1e-3.
constexpr double kFloatTolerance = 5e-3;
// The fast path quantizes activations to 8 bits per block of 32 (as llama.cpp does): each
// element carries up to 1/254 of its block's largest magnitude as error, and SmolLM2's
// outlier channels make that coarse for their whole block. Over 30 layers the rounding noise
// compounds: measured max |error| over the vocabulary 0.38-2.2 (rms 0.08-1.0, worst on the
// ChatML prompt, whose special tokens carry the largest activations); llama.cpp 0.3.36 on the
// same prompts differs from the same reference by 0.42-1.15 (rms 0.09-0.39), see
// docs/benchmarks.md. 2.5 bounds ours with a little margin: this is a guard against gross
// breakage of the quantized path; the float test above is the tight check of the model's math.
constexpr double kLogitTolerance = 2.5;
// What decides a greedy token is the gap between the top two logits, whose error is far
// smaller than the largest error over the vocabulary: a top-2 gap under 0.5 in the reference
// counts as a near-tie, where our top-1 may differ (and a greedy text then diverge).
constexpr double kNearTie = 0.5;

}  // namespace

class TestForward : public QObject {
  Q_OBJECT
  std::unique_ptr<Model> model_;
  QJsonObject reference_;

  // Logits of every prompt position against the reference; returns the largest error of a
  // last position's logits. Fails on the first excess over `tolerance`.
  double compareLogits(cpu::MatmulPrecision precision, double tolerance) {
    CpuBackend backend(model_->weights, 0, KvType::F32, precision);  // f32 KV: the reference path
    const ModelConfig& c = model_->config();
    double worst = 0.0;
    for (const auto& pv : reference_["prompts"].toArray()) {
      QJsonObject p = pv.toObject();
      std::vector<int32_t> tokens = test::json_ints(p["tokens"].toArray());
      const int n = static_cast<int>(tokens.size());
      const int bs = 16;
      backend.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, (n + bs - 1) / bs, bs});
      std::vector<int32_t> table((n + bs - 1) / bs);
      for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(table.size() - 1 - i);  // scrambled
      ForwardBatch batch;
      batch.add_sequence(tokens.data(), n, 0, table, bs, false);
      for (int i = 0; i < n; ++i) batch.logits_indices.push_back(i);
      std::vector<float> logits;
      backend.forward(batch, logits);

      // Last position: every logit.
      QJsonArray last = p["logits_last"].toArray();
      if (last.size() != c.vocab_size) return INFINITY;
      const float* ours = logits.data() + static_cast<size_t>(n - 1) * c.vocab_size;
      double max_err = 0.0, sum_sq = 0.0;
      for (int v = 0; v < c.vocab_size; ++v) {
        double e = ours[v] - last[v].toDouble();
        max_err = std::max(max_err, std::fabs(e));
        sum_sq += e * e;
      }
      worst = std::max(worst, max_err);
      qInfo("%-10s %3d tokens: last position |logit error| max %.5f, rms %.5f", qPrintable(p["name"].toString()), n,
            max_err, std::sqrt(sum_sq / c.vocab_size));
      if (max_err >= tolerance) return max_err;

      // Every position: the reference's top-5 logits, and the same top-1 unless a near-tie.
      QJsonArray tops = p["logits_all_positions_top"].toArray();
      if (tops.size() != n) return INFINITY;
      for (int i = 0; i < n; ++i) {
        QJsonObject t = tops[i].toObject();
        QJsonArray ids = t["ids"].toArray(), vals = t["logits"].toArray();
        const float* row = logits.data() + static_cast<size_t>(i) * c.vocab_size;
        for (int k = 0; k < ids.size(); ++k) {
          double e = std::fabs(row[ids[k].toInt()] - vals[k].toDouble());
          if (e >= tolerance) return e;
        }
        int our_top = static_cast<int>(std::max_element(row, row + c.vocab_size) - row);
        if (vals[0].toDouble() - vals[1].toDouble() > kNearTie && our_top != ids[0].toInt()) return INFINITY;
      }
    }
    return worst;
  }

  // Greedy continuations; a token may differ only where the reference's top-2 gap is under
  // near_tie, and the text is compared no further after that.
  void compareGreedy(cpu::MatmulPrecision precision, double near_tie) {
    CpuBackend backend(model_->weights, 0, KvType::F32, precision);  // f32 KV: the reference path
    EngineConfig ec;
    ec.max_context = 1024;
    Engine engine(*model_, backend, ec);
    RequestRunner runner(engine);
    const int n_greedy = reference_["n_greedy"].toInt();
    QCOMPARE(n_greedy, 32);
    for (const auto& pv : reference_["prompts"].toArray()) {
      QJsonObject p = pv.toObject();
      std::vector<int32_t> tokens = test::json_ints(p["tokens"].toArray());
      QJsonObject g = p["greedy"].toObject();
      std::vector<int32_t> expected = test::json_ints(g["tokens"].toArray());
      QJsonArray margins = g["margins"].toArray();
      Request request;
      request.prompt = tokens;
      request.params.max_tokens = n_greedy;
      request.params.ignore_eos = true;
      RequestRun r = runner.run(std::move(request));
      QVERIFY2(r.ok(), r.error.c_str());
      QCOMPARE(static_cast<int>(r.tokens.size()), n_greedy);
      for (int k = 0; k < n_greedy; ++k) {
        if (r.tokens[k] != expected[k]) {
          // Allowed only at a near-tie of the reference, after which the texts diverge.
          QVERIFY2(margins[k].toDouble() < near_tie,
                   qPrintable(QStringLiteral("%1: token %2 differs (%3 vs %4), reference margin %5")
                                  .arg(p["name"].toString()).arg(k).arg(r.tokens[k]).arg(expected[k])
                                  .arg(margins[k].toDouble())));
          qInfo("%s: diverged at token %d on a near-tie", qPrintable(p["name"].toString()), k);
          break;
        }
      }
    }
  }

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model_path, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(ref_dir, "PAGEDCHAT_REFERENCE_DIR");
    model_ = Model::load(model_path);
    QFile f(QString::fromStdString(ref_dir + "/forward_reference.json"));
    QVERIFY2(f.open(QIODevice::ReadOnly), "forward_reference.json is missing (reference_make_forward runs first)");
    reference_ = QJsonDocument::fromJson(f.readAll()).object();
    QVERIFY(reference_["prompts"].toArray().size() >= 3);
  }

  // With f32 activations our arithmetic is the reference's up to float32 rounding: this
  // checks the architecture itself (layouts, RoPE, GQA, norms, paged attention) tightly.
  void floatActivationLogitsMatchTheReference() {
    double worst = compareLogits(cpu::MatmulPrecision::kFloatActivations, kFloatTolerance);
    QVERIFY2(worst < kFloatTolerance, qPrintable(QString::number(worst)));
  }

  // The fast path quantizes activations to 8 bits: a larger, stated error.
  void quantizedActivationLogitsMatchTheReference() {
    double worst = compareLogits(cpu::MatmulPrecision::kQuantizedActivations, kLogitTolerance);
    QVERIFY2(worst < kLogitTolerance, qPrintable(QString::number(worst)));
  }

  void floatActivationGreedyTokensMatchTheReference() {
    compareGreedy(cpu::MatmulPrecision::kFloatActivations, 100 * kFloatTolerance);
  }
  void quantizedActivationGreedyTokensMatchTheReference() {
    compareGreedy(cpu::MatmulPrecision::kQuantizedActivations, kNearTie);
  }
};

QTEST_APPLESS_MAIN(TestForward)
#include "test_forward.moc"
