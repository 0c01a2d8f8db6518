// K-quant panels (engine/quant/panel/panel_k.h, panel_low_bits.h): packing keeps every quant, scale
// and min of Q4_K, Q5_K, Q6_K, Q2_K, Q3_K and IQ4_XS rows, every SIMD kernel the machine has
// equals the scalar reference bit for bit whatever the tokens of a call, with compact activation
// rows and with expanded ones (the AVX-512 kernel's Q4_K and Q5_K min sums), and the panel dot
// agrees with vec_dot (the same exact integer sums in another float order).

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

const GgmlType kKTypes[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                            GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS};

// Random quants, scales and mins (every byte value), with super-block scales of model-like size.
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> m(ggml_row_size(type, cols) * static_cast<size_t>(rows));
  for (uint8_t& byte : m) byte = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.0005f, 0.01f);
  const size_t block = ggml_row_size(type, kQKK);
  for (size_t at = 0; at < m.size(); at += block) {
    const uint16_t d = fp32_to_fp16(scale(rng)), dmin = fp32_to_fp16(scale(rng));
    auto put = [&](size_t offset, uint16_t v) { std::memcpy(&m[at + offset], &v, 2); };
    switch (type) {
      case GgmlType::Q6_K: put(offsetof(block_q6_K, d), d); break;
      case GgmlType::Q3_K: put(offsetof(block_q3_K, d), d); break;
      case GgmlType::IQ4_XS: put(offsetof(block_iq4_xs, d), d); break;
      case GgmlType::Q2_K: put(offsetof(block_q2_K, d), d), put(offsetof(block_q2_K, dmin), dmin); break;
      default: put(offsetof(block_q4_K, d), d), put(offsetof(block_q4_K, dmin), dmin);  // Q4_K and Q5_K start alike
    }
  }
  return m;
}

std::vector<uint8_t> random_activations(GgmlType type, int64_t num_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 1.5f);
  const size_t row_bytes = activation_row_size(type, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(num_tokens));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (float& v : x) v = value(rng);
    // Some rows at the activation range's edges: every quant +-127 in a block.
    if (t % 5 == 4) for (int64_t k = 0; k < std::min<int64_t>(cols, 256); ++k) x[static_cast<size_t>(k)] = (k % 3 ? 1.0f : -1.0f);
    quantize_activation_row(type, x.data(), out.data() + row_bytes * t, cols);
  }
  return out;
}

std::vector<uint8_t> pack(GgmlType type, const std::vector<uint8_t>& m, int64_t rows, int64_t cols) {
  std::vector<uint8_t> packed(panel_matrix_bytes(type, rows, cols));
  pack_panels(type, m.data(), ggml_row_size(type, cols), rows, cols, packed.data());
  return packed;
}

std::vector<float> multiply(test::PanelRun run, GgmlType type, const std::vector<uint8_t>& packed, int64_t rows,
                            int64_t cols, const std::vector<uint8_t>& act, int64_t num_tokens, int64_t tokens_per_call) {
  return test::multiply_panels(run, type, packed, rows, cols, act.data(), activation_row_size(type, cols), num_tokens,
                               tokens_per_call);
}

}  // namespace

class TestQuantPanelK : public QObject {
  Q_OBJECT

 private slots:
  void packingKeepsEveryQuantScaleAndMin() {
    std::mt19937 rng(3);
    const int64_t rows = 21, cols = 512, nb = cols / kQKK;  // a partial last panel
    const auto q4 = random_matrix(GgmlType::Q4_K, rows, cols, rng);
    const auto q5 = random_matrix(GgmlType::Q5_K, rows, cols, rng);
    const auto q6 = random_matrix(GgmlType::Q6_K, rows, cols, rng);
    const auto packed4 = pack(GgmlType::Q4_K, q4, rows, cols);
    const auto packed5 = pack(GgmlType::Q5_K, q5, rows, cols);
    const auto packed6 = pack(GgmlType::Q6_K, q6, rows, cols);
    QCOMPARE(packed4.size(), size_t{2 * 2 * sizeof(panel_q4_K)});
    QCOMPARE(packed5.size(), size_t{2 * 2 * sizeof(panel_q5_K)});
    QCOMPARE(packed6.size(), size_t{2 * 2 * sizeof(panel_q6_K)});
    const auto* rows4 = reinterpret_cast<const block_q4_K*>(q4.data());
    const auto* rows5 = reinterpret_cast<const block_q5_K*>(q5.data());
    const auto* rows6 = reinterpret_cast<const block_q6_K*>(q6.data());
    for (int64_t r = 0; r < 32; ++r) {
      for (int64_t i = 0; i < nb; ++i) {
        const auto& p4 = reinterpret_cast<const panel_q4_K*>(packed4.data())[(r / kPanelRows) * nb + i];
        const auto& p5 = reinterpret_cast<const panel_q5_K*>(packed5.data())[(r / kPanelRows) * nb + i];
        const auto& p6 = reinterpret_cast<const panel_q6_K*>(packed6.data())[(r / kPanelRows) * nb + i];
        const int lane = static_cast<int>(r % kPanelRows);
        const bool real = r < rows;
        for (int k = 0; k < kQKK; ++k) {
          QCOMPARE(panel_quant(p4, lane, k), real ? quant_q4_K(rows4[r * nb + i], k) : 0);
          QCOMPARE(panel_quant(p5, lane, k), real ? quant_q5_K(rows5[r * nb + i], k) : 0);
          QCOMPARE(panel_quant(p6, lane, k), real ? quant_q6_K(rows6[r * nb + i], k) + 32 : 0);
        }
        for (int s = 0; s < 8; ++s) {
          uint8_t scale = 0, min = 0;
          if (real) get_scale_min_k4(s, rows4[r * nb + i].scales, &scale, &min);
          QCOMPARE(p4.scales[s][lane], scale);
          QCOMPARE(p4.mins[s / 2][2 * lane + s % 2], min);
          if (real) get_scale_min_k4(s, rows5[r * nb + i].scales, &scale, &min);
          QCOMPARE(p5.scales[s][lane], scale);
          QCOMPARE(p5.mins[s / 2][2 * lane + s % 2], min);
        }
        for (int g = 0; g < 16; ++g) QCOMPARE(p6.scales[g][lane], real ? rows6[r * nb + i].scales[g] : int8_t{0});
        QCOMPARE(p4.d[lane], real ? rows4[r * nb + i].d : uint16_t{0});
        QCOMPARE(p4.dmin[lane], real ? rows4[r * nb + i].dmin : uint16_t{0});
        QCOMPARE(p5.d[lane], real ? rows5[r * nb + i].d : uint16_t{0});
        QCOMPARE(p5.dmin[lane], real ? rows5[r * nb + i].dmin : uint16_t{0});
        QCOMPARE(p6.d[lane], real ? rows6[r * nb + i].d : uint16_t{0});
      }
    }
  }

  void packingKeepsEveryLowBitQuantAndScale() {
    std::mt19937 rng(5);
    const int64_t rows = 21, cols = 512, nb = cols / kQKK;  // a partial last panel
    const auto q2 = random_matrix(GgmlType::Q2_K, rows, cols, rng);
    const auto q3 = random_matrix(GgmlType::Q3_K, rows, cols, rng);
    const auto iq4 = random_matrix(GgmlType::IQ4_XS, rows, cols, rng);
    const auto packed2 = pack(GgmlType::Q2_K, q2, rows, cols);
    const auto packed3 = pack(GgmlType::Q3_K, q3, rows, cols);
    const auto packed4 = pack(GgmlType::IQ4_XS, iq4, rows, cols);
    QCOMPARE(packed2.size(), size_t{2 * 2 * sizeof(panel_q2_K)});
    QCOMPARE(packed3.size(), size_t{2 * 2 * sizeof(panel_q3_K)});
    QCOMPARE(packed4.size(), size_t{2 * 2 * sizeof(panel_iq4_xs)});
    const auto* rows2 = reinterpret_cast<const block_q2_K*>(q2.data());
    const auto* rows3 = reinterpret_cast<const block_q3_K*>(q3.data());
    const auto* rows4 = reinterpret_cast<const block_iq4_xs*>(iq4.data());
    for (int64_t r = 0; r < 32; ++r) {
      for (int64_t i = 0; i < nb; ++i) {
        const auto& p2 = reinterpret_cast<const panel_q2_K*>(packed2.data())[(r / kPanelRows) * nb + i];
        const auto& p3 = reinterpret_cast<const panel_q3_K*>(packed3.data())[(r / kPanelRows) * nb + i];
        const auto& p4 = reinterpret_cast<const panel_iq4_xs*>(packed4.data())[(r / kPanelRows) * nb + i];
        const int lane = static_cast<int>(r % kPanelRows);
        const bool real = r < rows;
        const auto& b2 = rows2[r * nb + i];
        const auto& b3 = rows3[r * nb + i];
        const auto& b4 = rows4[r * nb + i];
        for (int k = 0; k < kQKK; ++k) {
          QCOMPARE(panel_quant(p2, lane, k), real ? quant_q2_K(b2, k) : 0);
          QCOMPARE(panel_quant(p3, lane, k), real ? quant_q3_K(b3, k) + 4 : 0);
          if (real) QCOMPARE(iq4_level(panel_quant(p4, lane, k)), quant_iq4_xs(b4, k));
          else QCOMPARE(panel_quant(p4, lane, k), 0);
        }
        for (int g = 0; g < 16; ++g) {
          QCOMPARE(p2.scales[g][lane], real ? b2.scales[g] : uint8_t{0});
          QCOMPARE(int{p3.scales[g][lane]}, real ? get_scale_q3_K(b3.scales, g) : 0);
        }
        for (int s = 0; s < 8; ++s) QCOMPARE(int{p4.scales[s][lane]}, real ? get_scale_iq4_xs(b4, s) : 0);
        QCOMPARE(p2.d[lane], real ? b2.d : uint16_t{0});
        QCOMPARE(p2.dmin[lane], real ? b2.dmin : uint16_t{0});
        QCOMPARE(p3.d[lane], real ? b3.d : uint16_t{0});
        QCOMPARE(p4.d[lane], real ? b4.d : uint16_t{0});
      }
    }
  }

  void everyKernelEqualsReferenceBitForBit_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    QTest::addColumn<qint64>("tokens");
    for (GgmlType type : kKTypes) {
      const char* name = ggml_type_name(static_cast<uint32_t>(type)).data();
      const int t = static_cast<int>(type);
      QTest::addRow("%s one super-block, one token", name) << t << qint64{16} << qint64{256} << qint64{1};
      QTest::addRow("%s partial panel", name) << t << qint64{21} << qint64{512} << qint64{3};
      QTest::addRow("%s 2048 wide", name) << t << qint64{48} << qint64{2048} << qint64{5};
      QTest::addRow("%s a decode step", name) << t << qint64{32} << qint64{768} << qint64{16};
      QTest::addRow("%s every pass size", name) << t << qint64{37} << qint64{256} << qint64{23};
      // Enough tokens that the kernels unpack the panel's quants first (panel_blocks.h): Q6_K's
      // from 32 (AVX-512), Q5_K's from 128 (AVX-512); every type's from 12 on AVX2.
      QTest::addRow("%s a prefill chunk", name) << t << qint64{35} << qint64{1024} << qint64{45};
      QTest::addRow("%s a long prefill chunk", name) << t << qint64{19} << qint64{512} << qint64{131};
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
    const auto act = random_activations(t, tokens, cols, rng);
    const auto expected = multiply({true}, t, packed, rows, cols, act, tokens, tokens);
    const std::string mismatch = test::first_mismatch(test::simd_runs(true), t, packed, rows, cols, act.data(),
                                                      activation_row_size(t, cols), tokens, expected);
    QVERIFY2(mismatch.empty(), mismatch.c_str());
  }

  void panelDotAgreesWithVecDot_data() {
    QTest::addColumn<int>("type");
    for (GgmlType type : kKTypes) QTest::addRow("%s", ggml_type_name(static_cast<uint32_t>(type)).data()) << int(type);
  }
  void panelDotAgreesWithVecDot() {
    QFETCH(int, type);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(11);
    const int64_t rows = 48, cols = 2048, tokens = 3;
    const auto m = random_matrix(t, rows, cols, rng);
    const auto packed = pack(t, m, rows, cols);
    const auto act = random_activations(t, tokens, cols, rng);
    const size_t act_bytes = activation_row_size(t, cols), row_bytes = ggml_row_size(t, cols);
    const auto got = multiply({false, default_panel_kernel()}, t, packed, rows, cols, act, tokens, tokens);
    for (int64_t k = 0; k < tokens; ++k) {
      for (int64_t r = 0; r < rows; ++r) {
        const float want = reference::vec_dot(t, cols, m.data() + row_bytes * r, act.data() + act_bytes * k);
        // The same exact integers per super-block; the float steps differ in order (8 blocks,
        // and Q4_K's minimum terms summed apart).
        QVERIFY2(std::abs(got[k * rows + r] - want) <= 2e-5f * (1.0f + std::abs(want)),
                 qPrintable(QString("row %1 token %2: %3 vs %4").arg(r).arg(k).arg(got[k * rows + r]).arg(want)));
      }
    }
  }

  void aRowNotOfWholeSuperBlocksIsRefused() {
    std::vector<uint8_t> w(4096), dst(8192);
    for (GgmlType type : kKTypes) {
      QVERIFY(panel_supported(type));
      QVERIFY_THROWS_EXCEPTION(Error, panel_matrix_bytes(type, 2, 128));
      QVERIFY_THROWS_EXCEPTION(Error, pack_panels(type, w.data(), 144, 2, 96, dst.data()));
    }
  }
};

QTEST_APPLESS_MAIN(TestQuantPanelK)
#include "test_quant_panel_k.moc"
