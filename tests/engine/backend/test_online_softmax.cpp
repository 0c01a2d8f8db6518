// The online-softmax state (kernels/common/online_softmax.h) that the CUDA attention kernels share
// with the CPU: folding a row's (logit, value) pairs in one at a time, in any split of the row
// whose partial states are then merged (the split-K reduce), gives the two-pass softmax
// attention of the row, with -inf masks and logits large enough to overflow exp().

#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/online_softmax.h"

using namespace pagedchat::kernels;

namespace {

constexpr int kDim = 5;

struct Row {
  std::vector<float> logits;  // [n], some -inf
  std::vector<float> values;  // [n, kDim]
};

Row random_row(std::mt19937& rng, int n, float logit_offset, float mask_rate) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Row r;
  for (int j = 0; j < n; ++j) {
    const bool masked = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng) < mask_rate;
    r.logits.push_back(masked ? -INFINITY : logit_offset + 8.0f * u(rng));
    for (int d = 0; d < kDim; ++d) r.values.push_back(u(rng));
  }
  return r;
}

// Two-pass softmax attention in double: the definition.
std::vector<double> two_pass(const Row& r) {
  const int n = static_cast<int>(r.logits.size());
  double m = -INFINITY;
  for (float s : r.logits) m = std::max(m, static_cast<double>(s));
  std::vector<double> out(kDim, 0.0);
  if (m == -INFINITY) return out;
  double l = 0.0;
  for (int j = 0; j < n; ++j) l += std::exp(r.logits[j] - m);
  for (int j = 0; j < n; ++j)
    for (int d = 0; d < kDim; ++d) out[d] += std::exp(r.logits[j] - m) / l * r.values[j * kDim + d];
  return out;
}

struct Partial {
  SoftmaxState st;
  float acc[kDim] = {};
};

Partial fold(const Row& r, int begin, int end) {
  Partial p;
  for (int j = begin; j < end; ++j)
    accumulate(p.st, p.acc, r.logits[j], [&](int d) { return r.values[j * kDim + d]; }, kDim);
  return p;
}

// Splits the row at `cuts` (sorted, inside (0, n)), folds each part, merges left to right.
std::vector<float> split_and_merge(const Row& r, const std::vector<int>& cuts) {
  std::vector<int> bounds = {0};
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(static_cast<int>(r.logits.size()));
  Partial total;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    Partial p = fold(r, bounds[i], bounds[i + 1]);
    merge_into(total.st, total.acc, p.st, p.acc, kDim);
  }
  std::vector<float> out(kDim);
  for (int d = 0; d < kDim; ++d) out[d] = total.acc[d] * total.st.inv_sum();
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  for (int d = 0; d < kDim; ++d) {
    QVERIFY2(std::isfinite(got[d]), "not finite");
    QVERIFY2(std::fabs(got[d] - want[d]) <= 2e-6 + 2e-5 * std::fabs(want[d]),
             qPrintable(QString("d %1: %2 vs %3").arg(d).arg(got[d]).arg(want[d])));
  }
}

}  // namespace

class TestOnlineSoftmax : public QObject {
  Q_OBJECT
 private slots:
  void everyTwoWaySplitEqualsTwoPass() {
    std::mt19937 rng(1);
    for (int n : {1, 2, 3, 17, 64}) {
      const Row r = random_row(rng, n, 0.0f, 0.2f);
      for (int cut = 1; cut < n; ++cut) expect_close(split_and_merge(r, {cut}), two_pass(r));
      expect_close(split_and_merge(r, {}), two_pass(r));
    }
  }

  void randomManyWaySplitsEqualTwoPass() {
    std::mt19937 rng(2);
    for (int trial = 0; trial < 300; ++trial) {
      const int n = 1 + static_cast<int>(rng() % 300);
      const float offset = (trial % 3 == 0) ? 0.0f : (trial % 3 == 1 ? 1e4f : -1e4f);  // exp(1e4) overflows
      const Row r = random_row(rng, n, offset, (trial % 5) * 0.2f);
      std::vector<int> cuts;
      for (int c = 1; c < n; ++c)
        if (rng() % 7 == 0) cuts.push_back(c);
      expect_close(split_and_merge(r, cuts), two_pass(r));
    }
  }

  // One split, merged into an empty state, is that split's state bit for bit; so are empty
  // splits (a split past a short sequence's end) merged anywhere.
  void singleSplitAndEmptySplitsAreExact() {
    std::mt19937 rng(3);
    const Row r = random_row(rng, 100, 50.0f, 0.1f);
    const Partial whole = fold(r, 0, 100);
    Partial merged;
    Partial empty;
    merge_into(merged.st, merged.acc, empty.st, empty.acc, kDim);
    merge_into(merged.st, merged.acc, whole.st, whole.acc, kDim);
    merge_into(merged.st, merged.acc, empty.st, empty.acc, kDim);
    QCOMPARE(merged.st.m, whole.st.m);
    QCOMPARE(merged.st.l, whole.st.l);
    for (int d = 0; d < kDim; ++d) QCOMPARE(merged.acc[d], whole.acc[d]);
  }

  // All logits masked: zeros, not NaN, in any split; a masked part never disturbs the rest.
  void maskedRowsGiveZerosAndMaskedPartsAreIgnored() {
    std::mt19937 rng(4);
    const Row masked = random_row(rng, 20, 0.0f, 1.0f);
    for (int cut = 1; cut < 20; ++cut)
      for (float x : split_and_merge(masked, {cut})) QCOMPARE(x, 0.0f);
    Row r = random_row(rng, 20, 0.0f, 0.0f);
    for (int j = 0; j < 10; ++j) r.logits[j] = -INFINITY;
    expect_close(split_and_merge(r, {10}), two_pass(r));
    expect_close(split_and_merge(r, {5, 10, 15}), two_pass(r));
  }

  // The running max rises and falls across the split: either side may hold the larger max.
  void largerMaxOnEitherSide() {
    Row r;
    r.logits = {3000.0f, -3000.0f, 10.0f, 3001.0f};
    for (int j = 0; j < 4; ++j)
      for (int d = 0; d < kDim; ++d) r.values.push_back(static_cast<float>(j + d));
    for (int cut = 1; cut < 4; ++cut) expect_close(split_and_merge(r, {cut}), two_pass(r));
  }
};

QTEST_APPLESS_MAIN(TestOnlineSoftmax)
#include "test_online_softmax.moc"
