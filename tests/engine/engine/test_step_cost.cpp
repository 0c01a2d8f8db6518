// What the engine says each step computed and read (engine/engine/step_cost.h), against a count
// made the slow way: every token of every chunk, layer by layer, each matrix by its shape, each
// key a token attends to, each expert some token of the step routes to (at most). The closed
// forms of StepCostModel must agree to the last bit of a double's integer range; and the engine
// stamps every step with that cost and its forward pass's time.

#include <QtTest>

#include <algorithm>
#include <array>
#include <memory>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/engine/engine.h"
#include "engine/engine/step_cost.h"
#include "engine/model/random_model.h"

using namespace pagedchat;

namespace {

WeightMatrix matrix(int64_t rows, int64_t cols, size_t row_bytes) {
  WeightMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = row_bytes;
  return m;
}

// A model's shapes without its bytes: Gemma 3's pattern (5 local layers of a window of 8, then a
// global one), GQA, matrices whose rows take odd byte counts (as quantized ones do).
ModelWeights slidingWindowShapes() {
  ModelWeights w;
  ModelConfig& c = w.config;
  c.num_layers = 6;
  c.dim = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_dim = 96;
  c.vocab_size = 300;
  c.sliding_window = 8;
  c.sliding_window_pattern = 6;
  for (int l = 0; l < c.num_layers; ++l) {
    LayerWeights L;
    L.wq = matrix(64, 64, 36 + l);
    L.wk = matrix(32, 64, 36);
    L.wv = matrix(32, 64, 34);
    L.wo = matrix(64, 64, 36);
    L.w_gate = matrix(96, 64, 40);
    L.w_up = matrix(96, 64, 40);
    L.w_down = matrix(64, 96, 54);
    w.layers.push_back(L);
  }
  w.output = matrix(300, 64, 72);
  return w;
}

struct Slow {
  double flops = 0, bytes = 0;
};

// The count the slow way. kv_token_bytes: one token's K and V over all layers.
Slow countSlowly(const ModelWeights& w, int64_t kv_token_bytes, const StepRecord& step) {
  const ModelConfig& c = w.config;
  Slow s;
  double tokens = 0, logits = 0;
  for (const auto& ch : step.chunks) tokens += ch.num_tokens, logits += ch.num_logits;
  auto add = [&](const WeightMatrix& m, double times, bool read) {
    s.flops += 2.0 * times * m.rows * m.cols;
    if (read) s.bytes += static_cast<double>(m.rows) * m.row_bytes;
  };
  for (const LayerWeights& L : w.layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.router}) add(*m, tokens, true);
    if (!L.experts.empty()) {
      const double touched = std::min<double>(c.num_experts, tokens * c.num_experts_used);
      for (int e = 0; e < c.num_experts; ++e)
        for (const WeightMatrix* m : {&L.experts[e].gate, &L.experts[e].up, &L.experts[e].down})
          add(*m, tokens * c.num_experts_used / c.num_experts, e < touched);
    }
  }
  add(w.output, logits, logits > 0);
  for (const auto& ch : step.chunks)
    for (int l = 0; l < c.num_layers; ++l) {
      const int64_t window = c.window_of(l);
      int64_t lowest = INT64_MAX, highest = -1;
      for (int64_t p = ch.start; p < ch.start + ch.num_tokens; ++p) {
        const int64_t lo = window > 0 ? std::max<int64_t>(0, p + 1 - window) : 0;
        for (int64_t key = lo; key <= p; ++key) s.flops += 4.0 * c.num_heads * c.head_dim;  // q.k and p.v
        lowest = std::min(lowest, lo);
        highest = std::max(highest, p);
      }
      if (highest >= 0) s.bytes += static_cast<double>(kv_token_bytes) / c.num_layers * static_cast<double>(highest - lowest + 1);
    }
  return s;
}

// A step of chunks given as (start position, tokens, logit rows).
StepRecord stepOf(std::initializer_list<std::array<int32_t, 3>> chunks) {
  StepRecord step;
  for (const auto& [start, tokens, logits] : chunks) {
    StepRecord::Chunk c;
    c.start = start;
    c.num_tokens = tokens;
    c.num_logits = logits;
    step.chunks.push_back(c);
  }
  return step;
}

// The prompts run to the end (max_tokens each, EOS ignored) on an engine of 4-token blocks and
// 16-token steps: each step that computed something, as the engine recorded it.
std::vector<StepRecord> stepsOf(const Model& m, CpuBackend& backend, const std::vector<std::vector<int32_t>>& prompts,
                                int max_tokens) {
  EngineConfig ec;
  ec.block_size = 4;
  ec.max_context = 64;
  ec.max_batched_tokens = 16;
  Engine engine(m, backend, ec);
  for (const std::vector<int32_t>& prompt : prompts) {
    Request r;
    r.prompt = prompt;
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;
    engine.submit(r);
  }
  std::vector<StepRecord> steps;
  for (bool more = true; more;) {
    more = engine.step();
    if (!engine.last_step().chunks.empty()) steps.push_back(engine.last_step());
  }
  return steps;
}

}  // namespace

class TestStepCost : public QObject {
  Q_OBJECT

  // Chunks a scheduler makes: a prompt from 0, a chunk in the middle, decodes deep in and at the
  // window's edge, a verification of drafts.
  const std::vector<StepRecord> kSteps = {
      stepOf({{0, 1, 1}}),
      stepOf({{0, 32, 1}}),
      stepOf({{0, 7, 0}, {0, 8, 0}, {0, 9, 1}}),
      stepOf({{40, 32, 0}}),
      stepOf({{7, 1, 1}, {8, 1, 1}, {100, 1, 1}, {3, 5, 5}}),
      stepOf({{500, 16, 0}, {17, 1, 1}}),
  };

  void compare(const ModelWeights& w, int64_t kvTokenBytes) {
    const StepCostModel model(w, kvTokenBytes);
    for (const StepRecord& step : kSteps) {
      const StepCost fast = model.cost(step);
      const Slow slow = countSlowly(w, kvTokenBytes, step);
      QCOMPARE(fast.flops, slow.flops);
      QCOMPARE(fast.bytes_read, slow.bytes);
      QVERIFY(fast.intensity() > 0);
    }
    QCOMPARE(model.cost(StepRecord{}).flops, 0.0);
  }

 private slots:
  void slidingWindowLayersSeeOnlyTheirWindow() { compare(slidingWindowShapes(), 6 * 2 * 2 * 16 * 2); }

  void aMixtureOfExpertsReadsOnlyTheExpertsItCanUse() {
    const auto m = make_random_model("tiny-moe", 5, 1);
    QVERIFY(m->config().is_moe());
    compare(m->weights, m->config().num_layers * 2 * m->config().num_kv_heads * m->config().head_dim * 2);
  }

  void denseLlamaWithATiedHead() {
    const auto m = make_random_model("tiny", 5, 1);
    compare(m->weights, m->config().num_layers * 2 * m->config().num_kv_heads * m->config().head_dim * 4);
  }

  // The engine stamps each step: the chunks' logit rows, the forward pass's time, and the cost the
  // model gives those chunks; a prompt step reads about what a decode step reads, for many
  // times the arithmetic.
  void everyStepCarriesItsCostAndTime() {
    const auto m = make_random_model("tiny", 5, 1);
    CpuBackend backend(m->weights, 1, KvType::F32);
    const StepCostModel costs(m->weights, static_cast<int64_t>(backend.kv_block_bytes(1)));
    std::vector<int32_t> prompt;
    for (int i = 0; i < 20; ++i) prompt.push_back(10 + i);
    const std::vector<StepRecord> steps = stepsOf(*m, backend, {prompt}, 3);
    QCOMPARE(steps.size(), size_t{4});  // 16 prompt tokens, then 4 and the first sampled, then 2 decodes
    QCOMPARE(steps[0].chunks[0].num_tokens, 16);
    QCOMPARE(steps[0].chunks[0].num_logits, 0);  // the prompt's end is not in this chunk
    QCOMPARE(steps[1].chunks[0].num_logits, 1);
    QVERIFY(steps[2].chunks[0].is_decode);
    QCOMPARE(steps[2].chunks[0].num_logits, 1);
    for (const StepRecord& s : steps) {
      QVERIFY(s.forward_seconds > 0);
      const StepRecord alone = stepOf({{s.chunks[0].start, s.chunks[0].num_tokens, s.chunks[0].num_logits}});
      QCOMPARE(s.cost.flops, costs.cost(alone).flops);
      QCOMPARE(s.cost.bytes_read, costs.cost(alone).bytes_read);
    }
    QVERIFY(steps[0].cost.intensity() > 8 * steps[2].cost.intensity());
  }

  // A mixture of experts' step reads the experts its forward pass ran (the backend counts them,
  // each once per layer however many tokens chose it): a decode step of one chat exactly its
  // num_experts_used per layer; eight chats' decode step fewer than eight times that, since
  // chats share experts; a prompt chunk at most every expert. The bytes follow the count.
  void aMixtureOfExpertsStepReadsTheExpertsItRan() {
    const auto m = make_random_model("tiny-moe", 5, 1);
    const ModelConfig& c = m->config();
    CpuBackend backend(m->weights, 1, KvType::F32);
    const StepCostModel costs(m->weights, static_cast<int64_t>(backend.kv_block_bytes(1)));
    double expert_bytes = 0;  // one expert of one layer (every layer's are alike here)
    for (const WeightMatrix* w : {&m->weights.layers[0].experts[0].gate, &m->weights.layers[0].experts[0].up,
                                  &m->weights.layers[0].experts[0].down})
      expert_bytes += static_cast<double>(w->rows) * static_cast<double>(w->row_bytes);
    std::vector<std::vector<int32_t>> prompts(8);
    for (int chat = 0; chat < 8; ++chat)
      for (int i = 0; i < 3; ++i) prompts[chat].push_back(10 + 37 * chat + i);
    const std::vector<StepRecord> steps = stepsOf(*m, backend, prompts, 4);
    const int64_t per_token = static_cast<int64_t>(c.num_layers) * c.num_experts_used;
    bool shared = false;
    for (const StepRecord& s : steps) {
      const int64_t tokens = s.num_tokens();
      QVERIFY(s.experts_run >= per_token);
      QVERIFY(s.experts_run <= std::min<int64_t>(c.num_experts, tokens * c.num_experts_used) * c.num_layers);
      if (tokens == 1) QCOMPARE(s.experts_run, per_token);
      shared = shared || (tokens == 8 && s.experts_run < 8 * per_token);
      StepRecord unknown = s;
      unknown.experts_run = -1;
      // The bytes move from the bound to the count: by the experts the bound assumed and were not run.
      const double bound = static_cast<double>(std::min<int64_t>(c.num_experts, tokens * c.num_experts_used) * c.num_layers);
      QCOMPARE(costs.cost(unknown).bytes_read - s.cost.bytes_read, expert_bytes * (bound - static_cast<double>(s.experts_run)));
      QCOMPARE(s.cost.flops, costs.cost(unknown).flops);
    }
    QVERIFY(shared);
  }
};

QTEST_APPLESS_MAIN(TestStepCost)
#include "test_step_cost.moc"
