// Panels (engine/quant/panel.h): packing keeps every quant, the fast kernel equals the scalar
// definition bit for bit, a token's result does not depend on the other tokens or rows of the
// call, and the panel dot agrees with vec_dot within float-order error.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/panel.h"
#include "engine/quant/panel_blocks.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

using namespace pagedchat;

namespace {

// A rows x cols Q4_1 matrix of random quants with scales and minimums of model-like size.
std::vector<block_q4_1> random_matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<block_q4_1> m(static_cast<size_t>(rows * cols / kQK));
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), minimum(-0.4f, 0.1f);
  for (block_q4_1& b : m) {
    b.d = fp32_to_fp16(scale(rng));
    b.m = fp32_to_fp16(minimum(rng));
    for (uint8_t& q : b.qs) q = static_cast<uint8_t>(rng());
  }
  return m;
}

// num_tokens activation rows in the Q8_1 layout Q4_1 weights are multiplied with.
std::vector<uint8_t> random_activations(int64_t num_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 1.5f);
  const size_t row_bytes = activation_row_size(GgmlType::Q4_1, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(num_tokens));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (float& v : x) v = value(rng);
    quantize_activation_row(GgmlType::Q4_1, x.data(), out.data() + row_bytes * t, cols);
  }
  return out;
}

std::vector<uint8_t> pack(const std::vector<block_q4_1>& m, int64_t rows, int64_t cols) {
  std::vector<uint8_t> packed(panel_matrix_bytes(GgmlType::Q4_1, rows, cols));
  pack_panels(GgmlType::Q4_1, m.data(), static_cast<size_t>(cols / kQK) * sizeof(block_q4_1), rows, cols,
              packed.data());
  return packed;
}

using PanelDot = void (*)(GgmlType, int64_t, const void*, int64_t, int64_t, const void*, size_t, int64_t, float*,
                          int64_t);

// out[t * rows + r] for the whole matrix, panel by panel, tokens_per_call tokens at a time.
std::vector<float> multiply(PanelDot dot, const std::vector<uint8_t>& packed, int64_t rows, int64_t cols,
                            const std::vector<uint8_t>& act, int64_t num_tokens, int64_t tokens_per_call) {
  const size_t row_bytes = activation_row_size(GgmlType::Q4_1, cols);
  std::vector<float> out(static_cast<size_t>(rows * num_tokens), NAN);
  for (int64_t p = 0; p * kPanelRows < rows; ++p) {
    const int64_t n = std::min(kPanelRows, rows - p * kPanelRows);
    for (int64_t t0 = 0; t0 < num_tokens; t0 += tokens_per_call) {
      const int64_t nt = std::min(tokens_per_call, num_tokens - t0);
      dot(GgmlType::Q4_1, cols, packed.data(), p, n, act.data() + row_bytes * t0, row_bytes, nt,
          out.data() + t0 * rows + p * kPanelRows, rows);
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

class TestQuantPanel : public QObject {
  Q_OBJECT

 private slots:
  void packingKeepsEveryQuantAndScale() {
    std::mt19937 rng(1);
    const int64_t rows = 37, cols = 96;  // a partial last panel
    const auto m = random_matrix(rows, cols, rng);
    const auto packed = pack(m, rows, cols);
    QCOMPARE(packed.size(), size_t{3 * 3 * sizeof(panel_q4_1)});
    const auto* panels = reinterpret_cast<const panel_q4_1*>(packed.data());
    for (int64_t r = 0; r < 48; ++r) {
      for (int64_t i = 0; i < cols / kQK; ++i) {
        const panel_q4_1& pb = panels[(r / kPanelRows) * (cols / kQK) + i];
        const int lane = static_cast<int>(r % kPanelRows);
        for (int k = 0; k < kQK; ++k) {
          const int expected = r < rows ? quant_q4_1(m[r * (cols / kQK) + i], k) : 0;
          QCOMPARE(panel_quant(pb, lane, k), expected);
        }
        QCOMPARE(pb.d[lane], r < rows ? m[r * (cols / kQK) + i].d : uint16_t{0});
        QCOMPARE(pb.m[lane], r < rows ? m[r * (cols / kQK) + i].m : uint16_t{0});
      }
    }
  }

  void fastKernelEqualsReferenceBitForBit_data() {
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    QTest::addColumn<qint64>("tokens");
    QTest::newRow("one block, one token") << qint64{16} << qint64{32} << qint64{1};
    QTest::newRow("partial panel") << qint64{21} << qint64{64} << qint64{3};
    QTest::newRow("576 wide") << qint64{64} << qint64{576} << qint64{5};
    QTest::newRow("1536 wide") << qint64{32} << qint64{1536} << qint64{4};
  }
  void fastKernelEqualsReferenceBitForBit() {
    QFETCH(qint64, rows);
    QFETCH(qint64, cols);
    QFETCH(qint64, tokens);
    std::mt19937 rng(static_cast<uint32_t>(rows * 7 + cols + tokens));
    const auto packed = pack(random_matrix(rows, cols, rng), rows, cols);
    const auto act = random_activations(tokens, cols, rng);
    const auto expected = multiply(reference::panel_dot, packed, rows, cols, act, tokens, tokens);
    QVERIFY(same_bits(multiply(panel_dot, packed, rows, cols, act, tokens, tokens), expected));
    // Whatever else the call holds: one token per call, two, or all at once.
    QVERIFY(same_bits(multiply(panel_dot, packed, rows, cols, act, tokens, 1), expected));
    QVERIFY(same_bits(multiply(panel_dot, packed, rows, cols, act, tokens, 2), expected));
  }

  void panelDotAgreesWithVecDot() {
    std::mt19937 rng(7);
    const int64_t rows = 48, cols = 1536, tokens = 3;
    const auto m = random_matrix(rows, cols, rng);
    const auto packed = pack(m, rows, cols);
    const auto act = random_activations(tokens, cols, rng);
    const size_t row_bytes = activation_row_size(GgmlType::Q4_1, cols);
    const auto got = multiply(panel_dot, packed, rows, cols, act, tokens, tokens);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        const float want = reference::vec_dot(GgmlType::Q4_1, cols, &m[r * (cols / kQK)], act.data() + row_bytes * t);
        // Both sum the same exact block integers; only the float order differs (48 blocks).
        QVERIFY2(std::abs(got[t * rows + r] - want) <= 1e-5f * (1.0f + std::abs(want)),
                 qPrintable(QString("row %1 token %2: %3 vs %4").arg(r).arg(t).arg(got[t * rows + r]).arg(want)));
      }
    }
  }

  void unsupportedInputIsAnError() {
    std::vector<uint8_t> dst(4096);
    std::vector<uint8_t> w(4096);
    QVERIFY(!panel_supported(GgmlType::Q8_0));
    QVERIFY_THROWS_EXCEPTION(Error, pack_panels(GgmlType::Q8_0, w.data(), 34, 2, 32, dst.data()));
    QVERIFY_THROWS_EXCEPTION(Error, pack_panels(GgmlType::Q4_1, w.data(), 20, 2, 48, dst.data()));
    QVERIFY_THROWS_EXCEPTION(Error, panel_matrix_bytes(GgmlType::Q4_1, 2, 0));
  }
};

QTEST_APPLESS_MAIN(TestQuantPanel)
#include "test_quant_panel.moc"
