// Random-weight models (engine/model/random_model.h): the same (shape, seed) gives the same
// bytes at any thread count and another seed other bytes; the big shapes have their published
// sizes; the tiny one runs through CpuBackend and the Engine deterministically (greedy, alone
// or batched) with logits of the intended scale; the byte tokenizer maps bytes to ids.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_runner.h"
#include "engine/model/random_model.h"

using namespace pagedchat;

namespace {

bool same_bytes(const WeightMatrix& a, const WeightMatrix& b) {
  return a.type == b.type && a.rows == b.rows && a.cols == b.cols &&
         std::memcmp(a.data, b.data, static_cast<size_t>(a.rows) * a.row_bytes) == 0;
}

bool same_weights(const ModelWeights& a, const ModelWeights& b) {
  if (!same_bytes(a.token_embedding, b.token_embedding) || !same_bytes(a.output, b.output) ||
      a.output_norm != b.output_norm || a.layers.size() != b.layers.size() || a.rope_inv_freq != b.rope_inv_freq)
    return false;
  for (size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights &x = a.layers[l], &y = b.layers[l];
    if (!same_bytes(x.wq, y.wq) || !same_bytes(x.wk, y.wk) || !same_bytes(x.wv, y.wv) || !same_bytes(x.wo, y.wo) ||
        !same_bytes(x.w_gate, y.w_gate) || !same_bytes(x.w_up, y.w_up) || !same_bytes(x.w_down, y.w_down) ||
        x.attn_norm != y.attn_norm || x.ffn_norm != y.ffn_norm)
      return false;
  }
  return true;
}

int64_t num_parameters(const ModelConfig& c, bool tied) {
  const int64_t per_layer = 2ll * c.dim + 2ll * c.dim * c.q_dim() + 2ll * c.dim * c.kv_dim() + 3ll * c.dim * c.ffn_dim;
  return c.num_layers * per_layer + c.dim + (tied ? 1 : 2) * static_cast<int64_t>(c.vocab_size) * c.dim;
}

std::vector<int32_t> greedy(RequestRunner& runner, std::vector<int32_t> prompt, int max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  RequestRun run = runner.run(std::move(r));
  return run.tokens;
}

}  // namespace

class TestRandomModel : public QObject {
  Q_OBJECT

 private slots:
  void sameSeedSameBytesAnyThreads() {
    auto a = make_random_model("tiny", 7, 1);
    auto b = make_random_model("tiny", 7, 2);
    QVERIFY(same_weights(a->weights, b->weights));
    auto c = make_random_model("tiny", 8, 2);
    QVERIFY(!same_weights(a->weights, c->weights));
    QVERIFY(!same_bytes(a->weights.layers[0].wq, a->weights.layers[1].wq));  // layers differ too
  }

  void hashIsFixed() {
    // Written-down values: a change to the hash changes every benchmark's weights.
    QCOMPARE(random_uniform(0, 0, 0), 0.304896951f);
    QCOMPARE(random_uniform(1, 2, 3), -0.491765261f);
    QVERIFY(random_uniform(1, 0, 0) != random_uniform(2, 0, 0));
    QVERIFY(random_uniform(1, 0, 0) != random_uniform(1, 1, 0));
    double sum = 0, sum_sq = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      const float u = random_uniform(3, 5, static_cast<uint64_t>(i));
      QVERIFY(u >= -1.0f && u < 1.0f);
      sum += u;
      sum_sq += static_cast<double>(u) * u;
    }
    QVERIFY(std::fabs(sum / n) < 0.01);                 // mean 0
    QVERIFY(std::fabs(sum_sq / n - 1.0 / 3.0) < 0.01);  // variance of U(-1, 1)
  }

  void tinyWeightsHaveTheirScale() {
    auto m = make_random_model("tiny", 1, 2);
    const WeightMatrix& wq = m->weights.layers[0].wq;
    QCOMPARE(wq.type, GgmlType::BF16);
    double sum_sq = 0;
    const auto* p = reinterpret_cast<const uint16_t*>(wq.data);
    const int64_t n = wq.rows * wq.cols;
    for (int64_t i = 0; i < n; ++i) sum_sq += std::pow(bf16_to_fp32(p[i]), 2);
    const double stddev = std::sqrt(sum_sq / n);
    QVERIFY2(std::fabs(stddev * std::sqrt(256.0) - 1.0) < 0.02, qPrintable(QString::number(stddev)));
    QVERIFY(!m->weights.tied_embeddings);
    QCOMPARE(m->weights.rope_inv_freq.size(), size_t(32));
    QCOMPARE(m->weights.rope_inv_freq[0], 1.0f);
  }

  void publishedShapes() {
    const ModelConfig one = random_model_config("llama-3.2-1b");
    QCOMPARE(one.num_layers, 16);
    QCOMPARE(one.head_dim, 64);
    QCOMPARE(one.vocab_size, 128256);
    QVERIFY(one.rope_llama3.enabled);
    QCOMPARE(num_parameters(one, true), int64_t(1235814400));  // Llama 3.2 1B: 1.24 B
    const ModelConfig eight = random_model_config("llama-3.1-8b");
    QCOMPARE(eight.num_kv_heads, 8);
    QCOMPARE(eight.head_dim, 128);
    QCOMPARE(eight.ffn_dim, 14336);
    QCOMPARE(num_parameters(eight, false), int64_t(8030261248));  // Llama 3.1 8B: 8.03 B
    QVERIFY_THROWS_EXCEPTION(Error, random_model_config("llama-9"));
  }

  void byteTokenizer() {
    auto m = make_random_model("tiny", 1, 1);
    const Tokenizer& t = *m->tokenizer;
    QCOMPARE(t.num_vocab(), 512);
    QCOMPARE(t.encode("Hi!", true, true), (std::vector<int32_t>{72, 105, 33}));
    QCOMPARE(t.decode(std::vector<int32_t>{72, 105, 300, 10}), std::string("Hi<300><10>"));
    QVERIFY(!t.is_eog(0) && !t.bos_id() && !t.eos_id());
  }

  void greedyIsDeterministicAloneOrBatched() {
    auto m = make_random_model("tiny", 42, 2);
    CpuBackend backend(m->weights, 2);
    EngineConfig ec;
    ec.block_size = 4;
    ec.num_blocks = 256;
    ec.max_batched_tokens = 64;  // the long prompt prefills in chunks
    std::vector<std::vector<int32_t>> prompts;
    for (const char* text : {"hello", "The random model runs through the engine in chunks of sixty-four tokens, "
                                      "and then decodes one token at a time, every step batched with the others.", "a"})
      prompts.push_back(m->tokenizer->encode(text, true, false));
    std::vector<std::vector<int32_t>> alone;
    {
      Engine engine(*m, backend, ec);
      RequestRunner runner(engine);
      for (const auto& p : prompts) alone.push_back(greedy(runner, p, 24));
    }
    for (const auto& out : alone) QCOMPARE(out.size(), size_t(24));
    QVERIFY(alone[0] != alone[1]);

    // All three at once, on a fresh engine: the same tokens.
    Engine engine(*m, backend, ec);
    std::map<RequestId, std::vector<int32_t>> got;
    engine.subscribe([&](const EngineEvent& e) {
      if (e.kind == EngineEventKind::token) got[e.request].push_back(e.token);
    });
    std::vector<RequestId> ids;
    for (const auto& p : prompts) {
      Request r;
      r.prompt = p;
      r.params.max_tokens = 24;
      r.params.ignore_eos = true;
      ids.push_back(engine.submit(r));
    }
    while (engine.step()) {}
    for (size_t i = 0; i < ids.size(); ++i) QCOMPARE(got[ids[i]], alone[i]);
  }

  void logitsHaveTheIntendedScale() {
    // Output std 2/sqrt(dim) over a normed hidden state: logits of std ~2, so greedy picks are
    // rarely near-ties (what `check backend` compares).
    auto m = make_random_model("tiny", 3, 2);
    CpuBackend backend(m->weights, 2);
    backend.allocate_kv({2, 2, 64, 8, 16});
    ForwardBatch batch;
    const std::vector<int32_t> tokens = m->tokenizer->encode("statistics", false, false);
    batch.add_sequence(tokens.data(), static_cast<int32_t>(tokens.size()), 0, {0}, 16, true);
    std::vector<float> logits;
    backend.forward(batch, logits);
    QCOMPARE(logits.size(), size_t(512));
    double sum = 0, sum_sq = 0;
    for (float x : logits) {
      QVERIFY(std::isfinite(x));
      sum += x;
      sum_sq += static_cast<double>(x) * x;
    }
    const double stddev = std::sqrt(sum_sq / 512 - std::pow(sum / 512, 2));
    QVERIFY2(stddev > 1.0 && stddev < 4.0, qPrintable(QString::number(stddev)));
  }
};

QTEST_APPLESS_MAIN(TestRandomModel)
#include "test_random_model.moc"
