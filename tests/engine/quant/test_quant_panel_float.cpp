// F16 and BF16 panels (engine/quant/panel/panel_float.h): packing keeps every value in its row's lane,
// every SIMD kernel the machine has equals the scalar reference bit for bit whatever the tokens
// of a call, and the panel dot agrees with vec_dot (the same products in another float order).

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/panel/panel.h"
#include "engine/quant/panel/panel_blocks.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"
#include "support/panel_multiply.h"

using namespace pagedchat;

namespace {

const GgmlType kFloatTypes[] = {GgmlType::F16, GgmlType::BF16};

// Model-like weights, with some of each type's edges: zeros, signed zeros, subnormal halves.
std::vector<uint16_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 0.05f);
  std::vector<uint16_t> m(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < m.size(); ++i) {
    float v = value(rng);
    if (i % 97 == 0) v = 0.0f;
    if (i % 89 == 0) v = -0.0f;
    if (i % 83 == 0) v = 3e-6f;  // a subnormal half
    m[i] = type == GgmlType::BF16 ? fp32_to_bf16(v) : fp32_to_fp16(v);
  }
  return m;
}

std::vector<float> random_activations(int64_t num_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 1.5f);
  std::vector<float> x(static_cast<size_t>(num_tokens * cols));
  for (float& v : x) v = value(rng);
  return x;
}

std::vector<uint8_t> pack(GgmlType type, const std::vector<uint16_t>& m, int64_t rows, int64_t cols) {
  std::vector<uint8_t> packed(panel_matrix_bytes(type, rows, cols));
  pack_panels(type, m.data(), static_cast<size_t>(cols) * 2, rows, cols, packed.data());
  return packed;
}

std::vector<float> multiply(test::PanelRun run, GgmlType type, const std::vector<uint8_t>& packed, int64_t rows,
                            int64_t cols, const std::vector<float>& x, int64_t num_tokens, int64_t tokens_per_call) {
  return test::multiply_panels(run, type, packed, rows, cols, reinterpret_cast<const uint8_t*>(x.data()),
                               static_cast<size_t>(cols) * sizeof(float), num_tokens, tokens_per_call);
}

}  // namespace

class TestQuantPanelFloat : public QObject {
  Q_OBJECT

 private slots:
  void packingKeepsEveryValue() {
    std::mt19937 rng(5);
    const int64_t rows = 21, cols = 64, nb = cols / kQK;
    for (GgmlType type : kFloatTypes) {
      const auto m = random_matrix(type, rows, cols, rng);
      const auto packed = pack(type, m, rows, cols);
      QCOMPARE(packed.size(), size_t{2 * 2 * sizeof(panel_f16)});
      const auto* blocks = reinterpret_cast<const panel_f16*>(packed.data());
      for (int64_t r = 0; r < 32; ++r)
        for (int64_t k = 0; k < cols; ++k)
          QCOMPARE(blocks[(r / kPanelRows) * nb + k / kQK].w[k % kQK][r % kPanelRows],
                   r < rows ? m[static_cast<size_t>(r * cols + k)] : uint16_t{0});
    }
  }

  void everyKernelEqualsReferenceBitForBit_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    QTest::addColumn<qint64>("tokens");
    for (GgmlType type : kFloatTypes) {
      const char* name = ggml_type_name(static_cast<uint32_t>(type)).data();
      const int t = static_cast<int>(type);
      QTest::addRow("%s one block, one token", name) << t << qint64{16} << qint64{32} << qint64{1};
      QTest::addRow("%s partial panel", name) << t << qint64{21} << qint64{96} << qint64{3};
      QTest::addRow("%s 576 wide", name) << t << qint64{48} << qint64{576} << qint64{5};
      QTest::addRow("%s a decode step", name) << t << qint64{32} << qint64{1536} << qint64{16};
      QTest::addRow("%s every pass size", name) << t << qint64{37} << qint64{64} << qint64{23};
    }
  }
  void everyKernelEqualsReferenceBitForBit() {
    QFETCH(int, type);
    QFETCH(qint64, rows);
    QFETCH(qint64, cols);
    QFETCH(qint64, tokens);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(static_cast<uint32_t>(rows * 7 + cols + tokens + type));
    const auto packed = pack(t, random_matrix(t, rows, cols, rng), rows, cols);
    const auto x = random_activations(tokens, cols, rng);
    const auto expected = multiply({true}, t, packed, rows, cols, x, tokens, tokens);
    const std::string mismatch =
        test::first_mismatch(test::simd_runs(false), t, packed, rows, cols, reinterpret_cast<const uint8_t*>(x.data()),
                             static_cast<size_t>(cols) * sizeof(float), tokens, expected);
    QVERIFY2(mismatch.empty(), mismatch.c_str());
  }

  void panelDotAgreesWithVecDot_data() {
    QTest::addColumn<int>("type");
    for (GgmlType type : kFloatTypes) QTest::addRow("%s", ggml_type_name(static_cast<uint32_t>(type)).data()) << int(type);
  }
  void panelDotAgreesWithVecDot() {
    QFETCH(int, type);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(13);
    const int64_t rows = 48, cols = 1536, tokens = 3;
    const auto m = random_matrix(t, rows, cols, rng);
    const auto packed = pack(t, m, rows, cols);
    const auto x = random_activations(tokens, cols, rng);
    const auto got = multiply({false, default_panel_kernel()}, t, packed, rows, cols, x, tokens, tokens);
    for (int64_t k = 0; k < tokens; ++k) {
      for (int64_t r = 0; r < rows; ++r) {
        const float want = reference::vec_dot(t, cols, m.data() + r * cols, x.data() + k * cols);
        QVERIFY2(std::abs(got[k * rows + r] - want) <= 1e-4f * (1.0f + std::abs(want)),
                 qPrintable(QString("row %1 token %2: %3 vs %4").arg(r).arg(k).arg(got[k * rows + r]).arg(want)));
      }
    }
  }

  void aRowNotOfWholeBlocksIsRefused() {
    std::vector<uint8_t> w(4096), dst(8192);
    for (GgmlType type : kFloatTypes) {
      QVERIFY(panel_supported(type));
      QVERIFY_THROWS_EXCEPTION(Error, pack_panels(type, w.data(), 80, 2, 40, dst.data()));
    }
    QVERIFY(!panel_supported(GgmlType::F32));
  }
};

QTEST_APPLESS_MAIN(TestQuantPanelFloat)
#include "test_quant_panel_float.moc"
