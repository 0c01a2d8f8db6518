// A mixture-of-experts router's choice (engine/backend/cpu/expert_routing.h) against a float64
// computation written out here, on random logits and on the cases a plain top-k gets wrong:
// equal probabilities, renormalization off and on, one expert far ahead, gpt-oss's softmax over
// the top logits; and
// the grouping by expert as a permutation of every (token, slot) in token order.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/backend/cpu/expert_routing.h"

using namespace pagedchat;

namespace {

ModelConfig moe(int experts, int used, bool norm = true) {
  ModelConfig c;
  c.num_experts = experts;
  c.num_experts_used = used;
  c.expert_weights_norm = norm;
  return c;
}

struct Route {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

Route route(const std::vector<float>& logits, const ModelConfig& c) {
  const int64_t tokens = static_cast<int64_t>(logits.size()) / c.num_experts;
  Route r{std::vector<int32_t>(tokens * c.num_experts_used), std::vector<float>(tokens * c.num_experts_used)};
  cpu::route_experts(logits.data(), tokens, c, r.experts.data(), r.weights.data());
  return r;
}

}  // namespace

class TestExpertRouting : public QObject {
  Q_OBJECT

 private slots:
  void randomLogitsMatchFloat64() {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const auto& [experts, used, norm] :
         {std::tuple{8, 2, true}, {128, 8, true}, {4, 3, false}, {16, 4, true}, {6, 6, true}}) {
      const ModelConfig c = moe(experts, used, norm);
      const int tokens = 50;
      std::vector<float> logits(tokens * experts);
      for (float& z : logits) z = normal(rng);
      const Route r = route(logits, c);
      for (int t = 0; t < tokens; ++t) {
        std::vector<double> p(experts);
        double sum = 0.0;
        for (int e = 0; e < experts; ++e) sum += p[e] = std::exp(static_cast<double>(logits[t * experts + e]));
        for (double& x : p) x /= sum;
        std::vector<int> order(experts);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
        double chosen = 0.0;
        for (int s = 0; s < used; ++s) chosen += p[order[s]];
        for (int s = 0; s < used; ++s) {
          QCOMPARE(r.experts[t * used + s], order[s]);
          const double expected = p[order[s]] / (norm ? chosen : 1.0);
          QVERIFY2(std::fabs(r.weights[t * used + s] - expected) <= 1e-6 * expected + 1e-9,
                   qPrintable(QStringLiteral("token %1 slot %2: %3 vs %4").arg(t).arg(s).arg(r.weights[t * used + s]).arg(expected)));
        }
      }
    }
  }

  // gpt-oss's gating: the top logits first, then the softmax of those alone (so the weights sum
  // to 1 whatever the others, and a far-behind expert outside the top k changes nothing).
  void softmaxOfTopKMatchesFloat64() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const auto& [experts, used] : {std::pair{32, 4}, {8, 2}, {4, 4}, {128, 1}}) {
      ModelConfig c = moe(experts, used, false);
      c.expert_gating = ExpertGating::kSoftmaxOfTopK;
      const int tokens = 40;
      std::vector<float> logits(tokens * experts);
      for (float& z : logits) z = normal(rng);
      const Route r = route(logits, c);
      for (int t = 0; t < tokens; ++t) {
        const float* z = logits.data() + t * experts;
        std::vector<int> order(experts);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[a] > z[b]; });
        double sum = 0.0;
        for (int s = 0; s < used; ++s) sum += std::exp(static_cast<double>(z[order[s]]));
        for (int s = 0; s < used; ++s) {
          QCOMPARE(r.experts[t * used + s], order[s]);
          const double expected = std::exp(static_cast<double>(z[order[s]])) / sum;
          QVERIFY2(std::fabs(r.weights[t * used + s] - expected) <= 1e-6 * expected + 1e-9,
                   qPrintable(QStringLiteral("token %1 slot %2: %3 vs %4").arg(t).arg(s).arg(r.weights[t * used + s]).arg(expected)));
        }
      }
    }
    // Logits of 1000 apart stay finite: the chosen ones' softmax is taken from their own maximum.
    ModelConfig c = moe(3, 2, false);
    c.expert_gating = ExpertGating::kSoftmaxOfTopK;
    const Route r = route({1000.0f, -1000.0f, 999.0f}, c);
    QCOMPARE(r.experts, (std::vector<int32_t>{0, 2}));
    QVERIFY(std::fabs(r.weights[0] - 1.0 / (1.0 + std::exp(-1.0))) < 1e-6);
  }

  // Equal logits: the lower index first, and every chosen expert gets an equal share.
  void tiesGoToTheLowerIndex() {
    const Route r = route({1.0f, 3.0f, 3.0f, 0.0f, 3.0f}, moe(5, 2));
    QCOMPARE(r.experts, (std::vector<int32_t>{1, 2}));
    QCOMPARE(r.weights[0], r.weights[1]);
    QCOMPARE(r.weights[0], 0.5f);
  }

  // One expert far ahead of the rest: its weight is 1, the others underflow to 0, none is NaN.
  // (With softmax gating the chosen probabilities sum to at least used / experts, so the 2^-14
  // clamp never binds below 16,384 experts; it is kept for llama.cpp's arithmetic.)
  void extremeLogitsStayFinite() {
    std::vector<float> logits(4, -200.0f);
    logits[2] = 0.0f;
    const Route r = route(logits, moe(4, 3));
    QCOMPARE(r.experts, (std::vector<int32_t>{2, 0, 1}));
    QCOMPARE(r.weights[0], 1.0f);
    for (float w : r.weights) QVERIFY(std::isfinite(w) && w >= 0.0f);
  }

  void groupsArePermutationsInTokenOrder() {
    std::mt19937 rng(3);
    const int experts = 10, used = 3, tokens = 40;
    std::vector<int32_t> chosen(tokens * used);
    for (int t = 0; t < tokens; ++t) {
      std::vector<int32_t> all(experts);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      std::copy(all.begin(), all.begin() + used, chosen.begin() + t * used);
    }
    cpu::ExpertGroups g;
    cpu::group_by_expert(chosen.data(), tokens, used, experts, g);
    QCOMPARE(g.offset.front(), 0);
    QCOMPARE(g.offset.back(), tokens * used);
    std::vector<int32_t> seen = g.entries;
    std::sort(seen.begin(), seen.end());
    for (int i = 0; i < tokens * used; ++i) QCOMPARE(seen[i], i);
    for (int e = 0; e < experts; ++e) {
      for (int i = g.offset[e]; i < g.offset[e + 1]; ++i) {
        QCOMPARE(chosen[g.entries[i]], e);
        if (i > g.offset[e]) QVERIFY(g.entries[i] > g.entries[i - 1]);
      }
    }
    // An expert no token chose has an empty group.
    cpu::group_by_expert(chosen.data(), 1, used, experts, g);
    int empty = 0;
    for (int e = 0; e < experts; ++e) empty += g.count(e) == 0;
    QCOMPARE(empty, experts - used);
  }
};

QTEST_APPLESS_MAIN(TestExpertRouting)
#include "test_expert_routing.moc"
