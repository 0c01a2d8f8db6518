// The CPU forward pass gives the same bits for a sequence whatever surrounds it: the block
// size, scrambled block tables, chunked prefill, other sequences in the batch, the thread
// count, in every KV element type, at contexts past attention's 256-key partitions too. The
// engine's determinism (alone = batched = preempted = cached) rests on this.

#include <QtTest>

#include <algorithm>
#include <cmath>

#include <cstring>
#include <numeric>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "support/test_env.h"

using namespace pagedchat;

namespace {

struct Run {
  int block_size = 16;
  int chunk = 1 << 20;  // prefill chunk length
  int threads = 2;
  bool with_neighbours = false;
  KvType kv_type = KvType::F16;
};

std::vector<int32_t> prompt_tokens(int n, int seed) {
  std::vector<int32_t> t(n);
  uint32_t x = 2654435761u * (seed + 1);
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<int32_t>(x % 40000) + 100;
  }
  return t;
}

// Logits of every position of `tokens`, computed as `run` says.
std::vector<float> all_logits(const Model& m, const std::vector<int32_t>& tokens, const Run& run) {
  const ModelConfig& c = m.config();
  CpuBackend backend(m.weights, run.threads, run.kv_type);
  const int bs = run.block_size;
  const int n = static_cast<int>(tokens.size());
  auto blocks_for = [bs](int tokens) { return (tokens + bs - 1) / bs; };
  std::vector<int32_t> neighbour_a = prompt_tokens(5, 11), neighbour_b = prompt_tokens(37, 12);
  for (auto* list : {&neighbour_a, &neighbour_b})
    for (int32_t& t : *list) t %= c.vocab_size;
  const int blocks_needed = blocks_for(n), na = blocks_for(5), nb = blocks_for(37);
  const int num_blocks = 3 * blocks_needed + na + nb;
  backend.allocate_kv({c.num_layers, c.num_kv_heads, c.head_dim, num_blocks, bs});
  // The sequence's blocks are every third block from the top: not contiguous, not in order.
  // The neighbours take the low ids.
  std::vector<int32_t> table(blocks_needed), table_a(na), table_b(nb);
  for (int i = 0; i < blocks_needed; ++i) table[i] = num_blocks - 1 - 3 * i;
  std::iota(table_a.begin(), table_a.end(), 0);
  std::iota(table_b.begin(), table_b.end(), na);

  std::vector<float> out(static_cast<size_t>(n) * c.vocab_size), logits;
  for (int start = 0; start < n; start += run.chunk) {
    int len = std::min(run.chunk, n - start);
    ForwardBatch batch;
    if (run.with_neighbours) batch.add_sequence(neighbour_a.data(), 5, 0, table_a, bs, true);
    int first = batch.num_tokens();
    batch.add_sequence(tokens.data() + start, len, start, table, bs, false);
    for (int i = 0; i < len; ++i) batch.logits_indices.push_back(first + i);
    if (run.with_neighbours) batch.add_sequence(neighbour_b.data(), 37, 0, table_b, bs, true);
    backend.forward(batch, logits);
    int skip = run.with_neighbours ? 1 : 0;
    std::memcpy(out.data() + static_cast<size_t>(start) * c.vocab_size,
                logits.data() + static_cast<size_t>(skip) * c.vocab_size, sizeof(float) * len * c.vocab_size);
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

class TestForwardInvariance : public QObject {
  Q_OBJECT
  std::unique_ptr<Model> model_;
  std::vector<int32_t> tokens_;
  std::vector<float> baseline_;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(path, "PAGEDCHAT_TEST_MODEL");
    model_ = Model::load(path);
    tokens_ = prompt_tokens(45, 1);
    baseline_ = all_logits(*model_, tokens_, Run{});
  }

  void blockSizeDoesNotMatter() {
    for (int bs : {1, 4, 8, 32}) {
      Run r;
      r.block_size = bs;
      QVERIFY2(same_bits(all_logits(*model_, tokens_, r), baseline_), qPrintable(QString::number(bs)));
    }
  }

  void chunkedPrefillDoesNotMatter() {
    for (int chunk : {1, 7, 16}) {
      Run r;
      r.chunk = chunk;
      QVERIFY2(same_bits(all_logits(*model_, tokens_, r), baseline_), qPrintable(QString::number(chunk)));
    }
  }

  void otherSequencesInTheBatchDoNotMatter() {
    Run r;
    r.with_neighbours = true;
    QVERIFY(same_bits(all_logits(*model_, tokens_, r), baseline_));
    r.chunk = 9;
    QVERIFY(same_bits(all_logits(*model_, tokens_, r), baseline_));
  }

  // A mixture of experts groups a step's tokens by expert, so which rows an expert's matmul takes
  // changes with the batch; a token's result must not.
  void mixtureOfExpertsIsBatchInvariant_data() {
    QTest::addColumn<QString>("shape");
    QTest::newRow("qwen3moe") << "tiny-moe";
    QTest::newRow("gpt-oss") << "tiny-oss";
  }
  void mixtureOfExpertsIsBatchInvariant() {
    QFETCH(QString, shape);
    const std::unique_ptr<Model> moe = make_random_model(shape.toStdString(), 5, 2);
    std::vector<int32_t> tokens = prompt_tokens(45, 3);
    for (int32_t& t : tokens) t %= moe->config().vocab_size;
    const std::vector<float> want = all_logits(*moe, tokens, Run{});
    QVERIFY(std::all_of(want.begin(), want.end(), [](float x) { return std::isfinite(x); }));
    for (Run r : {Run{4, 1 << 20, 2, false}, Run{16, 7, 2, false}, Run{16, 1, 1, true}, Run{8, 9, 3, true}})
      QVERIFY2(same_bits(all_logits(*moe, tokens, r), want), qPrintable(QString("block %1 chunk %2").arg(r.block_size).arg(r.chunk)));
  }

  void threadCountDoesNotMatter() {
    Run r;
    r.threads = 1;
    QVERIFY(same_bits(all_logits(*model_, tokens_, r), baseline_));
    r.threads = 3;
    QVERIFY(same_bits(all_logits(*model_, tokens_, r), baseline_));
  }

  // 600 tokens: decode-like one-token chunks and prefill chunks that straddle partitions read
  // the same bits, in each KV type, on 1 to 3 threads (1: no partition splits).
  void longContextsInEveryKvType() {
    const std::vector<int32_t> tokens = prompt_tokens(600, 2);
    for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0}) {
      Run base;
      base.kv_type = t;
      base.chunk = 300;
      const std::vector<float> want = all_logits(*model_, tokens, base);
      Run r = base;
      r.chunk = 1 << 20;
      r.threads = 3;
      QVERIFY2(same_bits(all_logits(*model_, tokens, r), want), kv_type_name(t));
      r.chunk = 113;
      r.threads = 1;
      r.block_size = 8;
      r.with_neighbours = true;
      QVERIFY2(same_bits(all_logits(*model_, tokens, r), want), kv_type_name(t));
    }
  }
};

QTEST_APPLESS_MAIN(TestForwardInvariance)
#include "test_forward_invariance.moc"
