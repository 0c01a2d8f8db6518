// exp_approx (engine/common/exp_approx.h): within 2 ulp of exp, the special values, and the
// SIMD loops of vector_ops (exp_inplace, swiglu) equal the scalar definition bit for bit at
// every position of a row, tails included.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/backend/cpu/vector_ops.h"
#include "engine/common/exp_approx.h"

using namespace pagedchat;

namespace {

double ulps_off(float got, double want) {
  const float w = static_cast<float>(want);
  const float step = std::nextafter(w, std::numeric_limits<float>::infinity()) - w;
  return std::fabs(static_cast<double>(got) - want) / static_cast<double>(step);
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Inputs a model meets (softmax arguments, minus gate activations) and the edges.
std::vector<float> probe_values(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-12.0f, 12.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = i % 3 == 0 ? wide(rng) : narrow(rng);
  const float edges[] = {0.0f, -0.0f, kExpMin, std::nextafter(kExpMin, -1.0f), kExpMax, 88.72f, -87.0f,
                         std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f};
  for (size_t i = 0; i < std::size(edges) && i < v.size(); ++i) v[i * 7 % v.size()] = edges[i];
  return v;
}

}  // namespace

class TestExpApprox : public QObject {
  Q_OBJECT

 private slots:
  void withinTwoUlpOfExp() {
    double worst = 0;
    float worst_x = 0;
    const int n = 2000000;
    for (int i = 0; i <= n; ++i) {
      // The whole normal range, and densely around 0 where softmax and silu live.
      const float x = i % 2 ? -87.0f + 175.3f * static_cast<float>(i) / n : (static_cast<float>(i) / n - 0.5f) * 20.0f;
      const double off = ulps_off(exp_approx(x), std::exp(static_cast<double>(x)));
      if (off > worst) worst = off, worst_x = x;
    }
    QVERIFY2(worst <= 2.0, qPrintable(QString("%1 ulp at %2").arg(worst).arg(worst_x)));
  }

  void specialValues() {
    QCOMPARE(exp_approx(0.0f), 1.0f);
    QCOMPARE(exp_approx(-0.0f), 1.0f);
    QCOMPARE(exp_approx(-std::numeric_limits<float>::infinity()), 0.0f);
    QCOMPARE(exp_approx(std::nextafter(kExpMin, -1.0f)), 0.0f);
    QVERIFY(exp_approx(kExpMin) > 0.0f);
    QVERIFY(std::isfinite(exp_approx(std::numeric_limits<float>::infinity())));
    QCOMPARE(exp_approx(1000.0f), exp_approx(kExpMax));
    QVERIFY(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
    // silu stays finite at both ends: exp(-gate) of a very negative gate is clamped, not inf.
    QCOMPARE(silu_mul_approx(-1000.0f, 1.0f) <= 0.0f, true);
    QVERIFY(std::fabs(silu_mul_approx(-1000.0f, 1.0f)) < 1e-30f);
    QCOMPARE(silu_mul_approx(1000.0f, 2.0f), 2000.0f);
  }

  void simdLoopsEqualScalarAtEveryPosition() {
    // Lengths that leave every tail size after 16- and 8-wide loops.
    for (int n = 1; n <= 41; ++n) {
      const std::vector<float> x = probe_values(n, static_cast<uint32_t>(n));
      std::vector<float> got = x;
      cpu::exp_inplace(got.data(), n);
      for (int i = 0; i < n; ++i) {
        const float want = exp_approx(x[i]);
        QVERIFY2(same_bits(got[i], want) || (std::isnan(got[i]) && std::isnan(want)),
                 qPrintable(QString("exp n=%1 i=%2 x=%3: %4 vs %5").arg(n).arg(i).arg(x[i]).arg(got[i]).arg(want)));
      }
      const std::vector<float> up = probe_values(n, static_cast<uint32_t>(100 + n));
      std::vector<float> gate = x;
      cpu::swiglu(gate.data(), up.data(), n);
      for (int i = 0; i < n; ++i) {
        const float want = silu_mul_approx(x[i], up[i]);
        QVERIFY2(same_bits(gate[i], want) || (std::isnan(gate[i]) && std::isnan(want)),
                 qPrintable(QString("swiglu n=%1 i=%2: %3 vs %4").arg(n).arg(i).arg(gate[i]).arg(want)));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestExpApprox)
#include "test_exp_approx.moc"
