// The sampler: greedy and its tie rule, seeds, each filter's effect, the penalties, and the
// distribution of temperature sampling.

#include <QtTest>

#include <cmath>
#include <map>

#include "engine/sample/sampler.h"

using namespace pagedchat;

namespace {
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// How often each token is drawn in n draws at temperature 1 with the filters of `p`.
std::map<int, int> draws(SamplingParams p, const std::vector<float>& logits, int n = 5000) {
  p.temperature = 1.0f;
  Sampler s(p);
  std::map<int, int> seen;
  for (int i = 0; i < n; ++i) ++seen[s.sample(logits, {})];
  return seen;
}
}  // namespace

class TestSampler : public QObject {
  Q_OBJECT
 private slots:
  void greedyTakesTheMaximumAndTheLowestIdOnTies() {
    Sampler s(SamplingParams{});
    std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f};
    QCOMPARE(s.sample(l, {}), 1);
    std::vector<float> neg = {-5.0f, -3.0f, -4.0f};
    QCOMPARE(s.sample(neg, {}), 1);
  }

  void logitBiasMovesTokensBeforeEveryFilter() {
    SamplingParams p;
    std::vector<float> l = {0.1f, 2.0f, -1.0f, 1.5f};
    p.logit_bias = {{1, -100.0f}};  // the argmax banned: the next best
    QCOMPARE(Sampler(p).sample(l, {}), 3);
    p.logit_bias = {{2, 100.0f}};  // the worst forced
    QCOMPARE(Sampler(p).sample(l, {}), 2);
    p.logit_bias = {{0, 1.0f}, {3, 0.5f}};  // small biases add: 1.1 and 2.0 tie with token 1, the lowest id wins
    QCOMPARE(Sampler(p).sample(l, {}), 1);
    p.logit_bias = {{0, 1.95f}};
    QCOMPARE(Sampler(p).sample(l, {}), 0);
    // At temperature 1 with top_k 1 the filter sees the biased logits: always the forced token.
    p.logit_bias = {{2, 100.0f}};
    p.top_k = 1;
    const auto seen = draws(p, l, 200);
    QCOMPARE(seen.size(), size_t(1));
    QCOMPARE(seen.begin()->first, 2);
    // Validation names the bad one.
    p.logit_bias = {{5, 101.0f}};
    QCOMPARE(p.validate(), std::string("logit_bias 101 (token 5) must be in [-100, 100]"));
    p.logit_bias = {{-1, 1.0f}};
    QCOMPARE(p.validate(), std::string("logit_bias token -1 must be >= 0"));
  }

  void sameSeedSameDrawsOtherSeedOtherDraws() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 42;
    std::vector<float> l = logits_of({0.2, 0.2, 0.2, 0.2, 0.2});
    Sampler a(p), b(p);
    std::vector<int32_t> ra, rb, rc;
    for (int i = 0; i < 64; ++i) {
      ra.push_back(a.sample(l, {}));
      rb.push_back(b.sample(l, {}));
    }
    QCOMPARE(ra, rb);
    p.seed = 43;
    Sampler c(p);
    for (int i = 0; i < 64; ++i) rc.push_back(c.sample(l, {}));
    QVERIFY(ra != rc);
  }

  void temperatureSamplingFollowsTheDistribution() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 7;
    Sampler s(p);
    std::vector<double> probs = {0.5, 0.3, 0.15, 0.05};
    std::vector<float> l = logits_of(probs);
    const int n = 40000;
    std::vector<int> counts(4, 0);
    for (int i = 0; i < n; ++i) ++counts[s.sample(l, {})];
    for (int k = 0; k < 4; ++k) {
      double sigma = std::sqrt(n * probs[k] * (1 - probs[k]));
      QVERIFY2(std::fabs(counts[k] - n * probs[k]) < 4 * sigma, qPrintable(QString::number(counts[k])));
    }
  }

  void lowTemperatureSharpens() {
    SamplingParams p;
    p.temperature = 0.02f;  // p(0) = 1 / (1 + (0.35/0.4)^50 + ...) = 0.9987
    p.seed = 1;
    Sampler s(p);
    std::vector<float> l = logits_of({0.4, 0.35, 0.25});
    int top = 0;
    for (int i = 0; i < 2000; ++i) top += s.sample(l, {}) == 0;
    QVERIFY(top >= 1990);
  }

  void topKKeepsOnlyTheKBest() {
    SamplingParams p;
    p.top_k = 2;
    p.seed = 3;
    auto seen = draws(p, logits_of({0.1, 0.4, 0.2, 0.3}));
    QCOMPARE(seen.size(), size_t(2));
    QVERIFY(seen.count(1) && seen.count(3));
  }

  void topPKeepsTheSmallestNucleus() {
    SamplingParams p;
    p.top_p = 0.7f;  // 0.4 + 0.3 reaches 0.7: tokens 1 and 3
    p.seed = 5;
    auto seen = draws(p, logits_of({0.1, 0.4, 0.2, 0.3}));
    QCOMPARE(seen.size(), size_t(2));
    QVERIFY(seen.count(1) && seen.count(3));
  }

  void minPDropsTheUnlikely() {
    SamplingParams p;
    p.min_p = 0.6f;  // keeps p >= 0.24: tokens 1 (0.4) and 3 (0.3)
    p.seed = 9;
    auto seen = draws(p, logits_of({0.1, 0.4, 0.2, 0.3}));
    QCOMPARE(seen.size(), size_t(2));
    QVERIFY(seen.count(1) && seen.count(3));
  }

  void repetitionPenaltyMovesTheMaximum() {
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    Sampler s(p);
    std::vector<float> l = {3.0f, 2.0f, -1.0f};
    std::vector<int32_t> history = {0};
    QCOMPARE(s.sample(l, history), 1);  // 3/2 = 1.5 < 2
    std::vector<int32_t> none;
    QCOMPARE(s.sample(l, none), 0);
  }

  void frequencyAndPresencePenaltiesCountOccurrences() {
    SamplingParams p;
    p.frequency_penalty = 0.4f;
    Sampler s(p);
    std::vector<float> l = {3.0f, 2.0f};
    std::vector<int32_t> twice = {0, 0};
    QCOMPARE(s.sample(l, twice), 0);  // 3 - 0.8 = 2.2 > 2
    std::vector<int32_t> thrice = {0, 0, 0};
    QCOMPARE(s.sample(l, thrice), 1);  // 3 - 1.2 = 1.8 < 2
    SamplingParams q;
    q.presence_penalty = 1.5f;
    Sampler t(q);
    QCOMPARE(t.sample(l, twice), 1);  // 3 - 1.5 = 1.5 < 2
  }

  void penaltyWindowLooksOnlyAtRecentTokens() {
    SamplingParams p;
    p.presence_penalty = 2.0f;
    p.penalty_last_n = 2;
    Sampler s(p);
    std::vector<float> l = {3.0f, 2.0f, 0.0f, 0.0f};
    std::vector<int32_t> old = {0, 2, 3};
    QCOMPARE(s.sample(l, old), 0);
  }

  void validationNamesTheBadParameter() {
    SamplingParams p;
    QVERIFY(p.validate().empty());
    p.temperature = -1.0f;
    QVERIFY(QString::fromStdString(p.validate()).contains("temperature"));
    p = {};
    p.top_p = 0.0f;
    QVERIFY(QString::fromStdString(p.validate()).contains("top_p"));
    p = {};
    p.max_tokens = 0;
    QVERIFY(QString::fromStdString(p.validate()).contains("max_tokens"));
    p = {};
    p.stop = {""};
    QVERIFY(QString::fromStdString(p.validate()).contains("stop"));
  }
};

QTEST_APPLESS_MAIN(TestSampler)
#include "test_sampler.moc"
