// The CUDA backend's fused-kernel math (kernels/common/layer_math.h) against CpuBackend's, bit for
// bit on the CPU: SwiGLU, the RMSNorm scale, RoPE angles and pairing. The rotation itself
// (x0 c - x1 s) is the one place where bits may differ: C++ builds contract floating-point
// expressions by default (GCC's -ffp-contract=fast) and -march=native has FMA, so which product
// is fused depends on how each side was vectorized; it is checked to within one rounding of the
// pair's magnitude. The kernels run this same code on the GPU, where nvcc also contracts.

#include <QtTest>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "engine/backend/cpu/rope.h"
#include "engine/backend/cpu/vector_ops.h"
#include "kernels/common/layer_math.h"

using namespace pagedchat;
using namespace pagedchat::kernels;

namespace {

std::vector<float> random_vector(int n, unsigned seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// What split_qkv_rope does to one head, element by element, from the unrotated values.
std::vector<float> rotate_like_kernel(const std::vector<float>& x, int num_heads, int head_dim, int rope_dim, bool neox,
                                      const std::vector<float>& cos_sin) {
  std::vector<float> y(x);
  const int half = rope_dim / 2;
  for (int h = 0; h < num_heads; ++h)
    for (int d = 0; d < rope_dim; ++d) {
      const RopeSlot s = rope_slot(neox, d, half);
      const int e = h * head_dim + d;
      y[e] = rope_rotate(s.first, x[e], x[h * head_dim + s.partner], cos_sin[2 * s.pair], cos_sin[2 * s.pair + 1]);
    }
  return y;
}

}  // namespace

class TestLayerMath : public QObject {
  Q_OBJECT

 private slots:
  void swigluMatchesCpu() {
    std::vector<float> gate = random_vector(1000, 1, 12.0f), up = random_vector(1000, 2);
    std::vector<float> cpu_out = gate;
    cpu::swiglu(cpu_out.data(), up.data(), 1000);
    for (int i = 0; i < 1000; ++i) QCOMPARE(silu_mul(gate[i], up[i]), cpu_out[i]);
  }

  void rmsNormMatchesCpuWhenTheSumIsExact() {
    // Small integers: their squares sum exactly in any order, so the kernel's tree sum and the
    // CPU's SIMD sum agree and the whole row must match bit for bit.
    const int n = 96;
    std::vector<float> x(n), w = random_vector(n, 3, 1.5f), cpu_out(n);
    float sum_sq = 0;
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 13 - 6);
      sum_sq += x[i] * x[i];
    }
    cpu::rms_norm(x.data(), w.data(), cpu_out.data(), n, 1e-5f);
    const float scale = rms_scale(sum_sq, n, 1e-5f);
    for (int i = 0; i < n; ++i) QCOMPARE(x[i] * scale * w[i], cpu_out[i]);
  }

  void ropeAnglesMatchCpu() {
    std::vector<float> inv_freq(64);
    for (int i = 0; i < 64; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * i / 128);
    for (int pos : {0, 1, 17, 4095, 131071}) {
      cpu::RopeAngles a;
      a.compute(pos, inv_freq);
      for (int i = 0; i < 64; ++i) {
        float c, s;
        rope_cos_sin(pos, inv_freq[i], &c, &s);
        QCOMPARE(c, a.cos[i]);
        QCOMPARE(s, a.sin[i]);
      }
    }
  }

  void ropeSlotsPairUp() {
    // Every rotating dim's partner points back at it, and each pair has one first element.
    for (bool neox : {false, true})
      for (int half : {4, 32, 64})
        for (int d = 0; d < 2 * half; ++d) {
          const RopeSlot s = rope_slot(neox, d, half);
          const RopeSlot back = rope_slot(neox, s.partner, half);
          QCOMPARE(back.partner, d);
          QCOMPARE(back.pair, s.pair);
          QVERIFY(back.first != s.first);
          QVERIFY(s.pair >= 0 && s.pair < half);
        }
    QCOMPARE(rope_slot(false, 5, 32).partner, 4);
    QCOMPARE(rope_slot(true, 5, 32).partner, 37);
  }

  void ropeRotationMatchesCpu_data() {
    QTest::addColumn<bool>("neox");
    QTest::addColumn<int>("rope_dim");
    QTest::newRow("adjacent, whole head") << false << 64;
    QTest::newRow("neox, whole head") << true << 64;
    QTest::newRow("adjacent, partial") << false << 32;
    QTest::newRow("neox, partial") << true << 48;
  }
  void ropeRotationMatchesCpu() {
    QFETCH(bool, neox);
    QFETCH(int, rope_dim);
    const int heads = 3, head_dim = 64;
    std::vector<float> inv_freq(rope_dim / 2);
    for (int i = 0; i < rope_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rope_dim);
    const std::vector<float> x = random_vector(heads * head_dim, 4);
    for (int pos : {0, 3, 1000}) {
      cpu::RopeAngles a;
      a.compute(pos, inv_freq);
      std::vector<float> cpu_out = x;
      cpu::apply_rope(cpu_out.data(), heads, head_dim, rope_dim, neox ? RopeLayout::kNeox : RopeLayout::kAdjacentPairs, a);
      std::vector<float> cos_sin(rope_dim);
      for (int i = 0; i < rope_dim / 2; ++i) rope_cos_sin(pos, inv_freq[i], &cos_sin[2 * i], &cos_sin[2 * i + 1]);
      const std::vector<float> ours = rotate_like_kernel(x, heads, head_dim, rope_dim, neox, cos_sin);
      for (int e = 0; e < heads * head_dim; ++e) {
        const int d = e % head_dim;
        if (d >= rope_dim) {
          QCOMPARE(ours[e], cpu_out[e]);  // not rotated: copied as is
          continue;
        }
        const float pair = std::fabs(x[e]) + std::fabs(x[e - d + rope_slot(neox, d, rope_dim / 2).partner]);
        QVERIFY2(std::fabs(ours[e] - cpu_out[e]) <= 2 * FLT_EPSILON * pair,
                 qPrintable(QString("dim %1: %2 vs %3").arg(e).arg(ours[e], 0, 'g', 9).arg(cpu_out[e], 0, 'g', 9)));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestLayerMath)
#include "test_layer_math.moc"
