// The parts of speculative decoding that need no model: prompt lookup's proposals, the
// rejection rule's output distribution (it must be the target's, whatever was drafted), the
// sampler's distribution against its own draws, and the draft-length plan's response to
// acceptance and batch size.

#include <QtTest>

#include <cmath>
#include <map>

#include "engine/sample/sampler.h"
#include "engine/speculative/ngram_drafter.h"
#include "engine/speculative/rejection.h"
#include "engine/speculative/speculation_policy.h"

using namespace pagedchat;

namespace {

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Pearson's chi-square of observed counts against expected probabilities.
double chi_square(const std::map<int32_t, int>& seen, const std::vector<double>& expected, int n) {
  double x = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == 0.0) {
      if (seen.count(static_cast<int32_t>(i))) return 1e9;
      continue;
    }
    const double e = expected[i] * n;
    const double o = seen.count(static_cast<int32_t>(i)) ? seen.at(static_cast<int32_t>(i)) : 0;
    x += (o - e) * (o - e) / e;
  }
  return x;
}

TokenProbs probs_of(const std::vector<double>& p) {
  TokenProbs t;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0) {
      t.ids.push_back(static_cast<int32_t>(i));
      t.probs.push_back(p[i]);
    }
  return t;
}

}  // namespace

class TestSpeculationParts : public QObject {
  Q_OBJECT
 private slots:
  void lookupProposesWhatFollowedTheLatestMatch() {
    NgramDrafter d(2, 3);
    // The last 3 tokens (1 2 3) occurred at the start: what followed them is proposed.
    QCOMPARE(d.lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 9, 1, 2, 3}, 3), (std::vector<int32_t>{4, 5, 9}));
    QCOMPARE(d.lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 9, 1, 2, 3}, 8), (std::vector<int32_t>{4, 5, 9, 1, 2, 3}));
    // (1 2) occurs twice before the end: the latest occurrence's continuation wins.
    QCOMPARE(d.lookup(std::vector<int32_t>{1, 2, 7, 5, 1, 2, 8, 6, 1, 2}, 2), (std::vector<int32_t>{8, 6}));
    // A longer match is preferred to a later shorter one: (3 1 2) at 0 beats (1 2) at 5.
    QCOMPARE(d.lookup(std::vector<int32_t>{3, 1, 2, 4, 0, 1, 2, 5, 3, 1, 2}, 1), (std::vector<int32_t>{4}));
    // Nothing repeats, or only single tokens do (min n = 2): no proposal.
    QVERIFY(d.lookup(std::vector<int32_t>{1, 2, 3, 4, 5}, 4).empty());
    QVERIFY(d.lookup(std::vector<int32_t>{5, 1, 2, 5}, 4).empty());
    QVERIFY(d.lookup(std::vector<int32_t>{1, 2, 3, 1, 2}, 0).empty());
    QVERIFY(d.lookup(std::vector<int32_t>{}, 4).empty());
    NgramDrafter one(1, 1);
    QCOMPARE(one.lookup(std::vector<int32_t>{5, 1, 2, 5}, 4), (std::vector<int32_t>{1, 2, 5}));
  }

  void samplerDistributionIsWhatItDraws() {
    const std::vector<double> p = {0.05, 0.3, 0.15, 0.4, 0.1};
    for (int filter = 0; filter < 3; ++filter) {
      SamplingParams params;
      params.temperature = 0.8f;
      if (filter == 1) params.top_k = 3;
      if (filter == 2) params.top_p = 0.8f;
      Sampler s(params);
      TokenProbs dist;
      s.distribution(logits_of(p), {}, dist);
      double total = 0.0;
      for (double x : dist.probs) total += x;
      QVERIFY(std::abs(total - 1.0) < 1e-12);
      if (filter == 1) QCOMPARE(dist.ids.size(), size_t(3));
      std::vector<double> expected(p.size(), 0.0);
      for (size_t i = 0; i < dist.ids.size(); ++i) expected[static_cast<size_t>(dist.ids[i])] = dist.probs[i];
      std::map<int32_t, int> seen;
      const int n = 40000;
      for (int i = 0; i < n; ++i) ++seen[s.sample(logits_of(p), {})];
      // 4 degrees of freedom at most: p < 0.001 above 18.5.
      QVERIFY2(chi_square(seen, expected, n) < 18.5, qPrintable(QString("filter %1").arg(filter)));
    }
    Sampler greedy(SamplingParams{});
    TokenProbs dist;
    greedy.distribution(logits_of(p), {}, dist);
    QCOMPARE(dist.ids, (std::vector<int32_t>{3}));
    QCOMPARE(dist.probs, (std::vector<double>{1.0}));
  }

  // Whatever the drafter proposes, the verified token is distributed as the target's p.
  void rejectionKeepsTheTargetDistribution() {
    const std::vector<double> p = {0.1, 0.2, 0.3, 0.4, 0.0};
    const TokenProbs target = probs_of(p);
    SamplingParams params;
    params.temperature = 1.0f;
    params.seed = 7;
    const int n = 60000;
    TokenProbs residual;
    // A lookup drafter: a point mass on a fixed token, likely or not, or on one p never gives.
    for (int32_t fixed : {0, 3, 4}) {
      Sampler rng(params);
      std::map<int32_t, int> seen;
      int kept = 0;
      for (int i = 0; i < n; ++i) {
        const int32_t y = accept_or_resample(target, fixed, nullptr, rng, residual);
        ++seen[y];
        kept += y == fixed;
      }
      QVERIFY2(chi_square(seen, p, n) < 16.3, qPrintable(QString("draft %1").arg(fixed)));  // 3 dof, p < 0.001
      QVERIFY(std::abs(kept / double(n) - p[static_cast<size_t>(fixed)]) < 0.01);
    }
    // A sampling drafter whose q differs from p, with mass where p has none.
    for (const std::vector<double>& qv : {std::vector<double>{0.4, 0.3, 0.1, 0.1, 0.1}, std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.0},
                                          std::vector<double>{0.0, 0.0, 0.0, 0.0, 1.0}}) {
      const TokenProbs q = probs_of(qv);
      Sampler rng(params), drafter_rng(params);
      std::map<int32_t, int> seen;
      int kept = 0;
      for (int i = 0; i < n; ++i) {
        const int32_t d = q.draw(drafter_rng.next_uniform());
        const int32_t y = accept_or_resample(target, d, &q, rng, residual);
        ++seen[y];
        kept += y == d;
      }
      QVERIFY(chi_square(seen, p, n) < 16.3);
      // The chance a draft is kept is sum min(p, q).
      double overlap = 0.0;
      for (size_t i = 0; i < p.size(); ++i) overlap += std::min(p[i], qv[i]);
      QVERIFY2(std::abs(kept / double(n) - overlap) < 0.01, qPrintable(QString::number(kept / double(n))));
    }
    // Greedy: kept exactly when the draft is the argmax, no draw either way.
    Sampler rng(SamplingParams{});
    TokenProbs point = probs_of({0, 0, 1, 0});
    QCOMPARE(accept_or_resample(point, 2, nullptr, rng, residual), 2);
    QCOMPARE(accept_or_resample(point, 1, nullptr, rng, residual), 2);
  }

  void acceptanceEstimateFollowsAndFades() {
    AcceptanceEstimate a;
    QCOMPARE(a.rate(), 0.5);
    for (int i = 0; i < 20; ++i) a.observe(4, 4);
    QVERIFY(a.rate() > 0.95);
    AcceptanceEstimate b;
    for (int i = 0; i < 20; ++i) b.observe(4, 0);
    QVERIFY(b.rate() < 0.15);
    for (int i = 0; i < 200; ++i) b.fade();
    QVERIFY(std::abs(b.rate() - 0.5) < 0.05);
  }

  void planDraftsWhatPays() {
    SpeculationConfig config;  // K = 6, token cost 0.25
    auto plan = [&](double alpha, int32_t avail, int32_t decoding, double draft_cost = 0.0, int32_t budget = 512) {
      std::vector<DraftCandidate> c(1, DraftCandidate{alpha, avail});
      return plan_draft_lengths(c, decoding, config, draft_cost, budget)[0];
    };
    // Alone: a sure proposal is taken whole (up to K), a poor one not at all.
    QCOMPARE(plan(0.99, 4, 1), 4);
    QCOMPARE(plan(0.99, 20, 1), 6);
    QCOMPARE(plan(0.2, 4, 1), 0);
    const int32_t mid = plan(0.6, 6, 1);
    QVERIFY(mid >= 1 && mid < 6);
    // More sequences decoding: the same acceptance buys fewer drafts.
    QVERIFY(plan(0.8, 6, 16) < plan(0.8, 6, 1));
    QCOMPARE(plan(0.6, 6, 32), 0);
    // A drafter that costs (a draft model as large as the target) never pays.
    QCOMPARE(plan(0.99, 6, 1, 1.0), 0);
    // The budget caps the total.
    std::vector<DraftCandidate> many(4, DraftCandidate{0.99, 6});
    std::vector<int32_t> k = plan_draft_lengths(many, 4, config, 0.0, 5);
    QCOMPARE(k[0] + k[1] + k[2] + k[3], 5);
    // Not adaptive: the whole proposal up to K, whatever the estimate.
    config.adaptive = false;
    QCOMPARE(plan(0.01, 4, 64), 4);
    QCOMPARE(plan(0.01, 9, 64), 6);
  }
};

QTEST_APPLESS_MAIN(TestSpeculationParts)
#include "test_speculation_parts.moc"
