// Panels (engine/quant/panel/panel.h): packing keeps every quant, the fast kernel equals the scalar
// definition bit for bit, a token's result does not depend on the other tokens or rows of the
// call, and the panel dot agrees with vec_dot within float-order error.

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

const GgmlType kPanelTypes[] = {GgmlType::Q4_1, GgmlType::Q8_0,   GgmlType::Q4_0, GgmlType::Q5_0,
                                GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4};

// A rows x cols matrix of random quants (every byte value, -128 included for Q8_0) with scales
// and minimums of model-like size.
std::vector<uint8_t> random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> m(ggml_row_size(type, cols) * static_cast<size_t>(rows));
  for (uint8_t& byte : m) byte = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.05f), minimum(-0.4f, 0.1f);
  const size_t block = ggml_row_size(type, kQK);
  for (size_t at = 0; at < m.size(); at += block) {
    if (type == GgmlType::MXFP4) {
      // A scale byte of a model's range (2^-28 .. 2^11) or, one block in 16, a subnormal one.
      m[at] = static_cast<uint8_t>(rng() % 16 == 0 ? rng() % 2 : 100 + rng() % 40);
      continue;
    }
    const uint16_t d = fp32_to_fp16(scale(rng)), min = fp32_to_fp16(minimum(rng));
    std::memcpy(&m[at], &d, 2);  // every other layout starts with d; Q4_1 and Q5_1 follow with m
    if (type == GgmlType::Q4_1 || type == GgmlType::Q5_1) std::memcpy(&m[at + 2], &min, 2);
  }
  return m;
}

// num_tokens activation rows in the layout `type` weights are multiplied with.
std::vector<uint8_t> random_activations(GgmlType type, int64_t num_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> value(0.0f, 1.5f);
  const size_t row_bytes = activation_row_size(type, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(num_tokens));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (float& v : x) v = value(rng);
    quantize_activation_row(type, x.data(), out.data() + row_bytes * t, cols);
  }
  return out;
}

std::vector<uint8_t> pack(GgmlType type, const std::vector<uint8_t>& m, int64_t rows, int64_t cols) {
  std::vector<uint8_t> packed(panel_matrix_bytes(type, rows, cols));
  pack_panels(type, m.data(), ggml_row_size(type, cols), rows, cols, packed.data());
  return packed;
}

using test::PanelRun;
constexpr PanelRun kReference{true};

std::vector<float> multiply(PanelRun run, GgmlType type, const std::vector<uint8_t>& packed, int64_t rows,
                            int64_t cols, const std::vector<uint8_t>& act, int64_t num_tokens, int64_t tokens_per_call) {
  return test::multiply_panels(run, type, packed, rows, cols, act.data(), activation_row_size(type, cols), num_tokens,
                               tokens_per_call);
}

}  // namespace

class TestQuantPanel : public QObject {
  Q_OBJECT

 private slots:
  void packingKeepsEveryQuantAndScale() {
    std::mt19937 rng(1);
    const int64_t rows = 37, cols = 96, nb = cols / kQK;  // a partial last panel
    const auto q4 = random_matrix(GgmlType::Q4_1, rows, cols, rng);
    const auto q8 = random_matrix(GgmlType::Q8_0, rows, cols, rng);
    const auto packed4 = pack(GgmlType::Q4_1, q4, rows, cols);
    const auto packed8 = pack(GgmlType::Q8_0, q8, rows, cols);
    QCOMPARE(packed4.size(), size_t{3 * 3 * sizeof(panel_q4_1)});
    QCOMPARE(packed8.size(), size_t{3 * 3 * sizeof(panel_q8_0)});
    const auto* rows4 = reinterpret_cast<const block_q4_1*>(q4.data());
    const auto* rows8 = reinterpret_cast<const block_q8_0*>(q8.data());
    for (int64_t r = 0; r < 48; ++r) {
      for (int64_t i = 0; i < nb; ++i) {
        const auto& p4 = reinterpret_cast<const panel_q4_1*>(packed4.data())[(r / kPanelRows) * nb + i];
        const auto& p8 = reinterpret_cast<const panel_q8_0*>(packed8.data())[(r / kPanelRows) * nb + i];
        const int lane = static_cast<int>(r % kPanelRows);
        const bool real = r < rows;
        for (int k = 0; k < kQK; ++k) {
          QCOMPARE(panel_quant(p4, lane, k), real ? quant_q4_1(rows4[r * nb + i], k) : 0);
          QCOMPARE(panel_quant(p8, lane, k), real ? int{rows8[r * nb + i].qs[k]} : 0);
        }
        QCOMPARE(p4.d[lane], real ? rows4[r * nb + i].d : uint16_t{0});
        QCOMPARE(p4.m[lane], real ? rows4[r * nb + i].m : uint16_t{0});
        QCOMPARE(p8.d[lane], real ? rows8[r * nb + i].d : uint16_t{0});
      }
    }
  }

  // Q4_0, Q5_0, Q5_1: every quant (unsigned, before the format's offset), its fifth bit
  // included, and the scales, in the lane of its row.
  void legacyPackingKeepsEveryQuant() {
    std::mt19937 rng(2);
    const int64_t rows = 21, cols = 64, nb = cols / kQK;
    const auto q4 = random_matrix(GgmlType::Q4_0, rows, cols, rng);
    const auto q5 = random_matrix(GgmlType::Q5_0, rows, cols, rng);
    const auto q51 = random_matrix(GgmlType::Q5_1, rows, cols, rng);
    const auto p4 = pack(GgmlType::Q4_0, q4, rows, cols);
    const auto p5 = pack(GgmlType::Q5_0, q5, rows, cols);
    const auto p51 = pack(GgmlType::Q5_1, q51, rows, cols);
    const auto* r4 = reinterpret_cast<const block_q4_0*>(q4.data());
    const auto* r5 = reinterpret_cast<const block_q5_0*>(q5.data());
    const auto* r51 = reinterpret_cast<const block_q5_1*>(q51.data());
    for (int64_t r = 0; r < 32; ++r) {
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t at = (r / kPanelRows) * nb + i;
        const auto& b4 = reinterpret_cast<const panel_q4_0*>(p4.data())[at];
        const auto& b5 = reinterpret_cast<const panel_q5_0*>(p5.data())[at];
        const auto& b51 = reinterpret_cast<const panel_q5_1*>(p51.data())[at];
        const int lane = static_cast<int>(r % kPanelRows);
        const bool real = r < rows;
        for (int k = 0; k < kQK; ++k) {
          QCOMPARE(legacy_panel_quant(b4, lane, k), real ? quant_q4_0(r4[r * nb + i], k) + 8 : 0);
          QCOMPARE(legacy_panel_quant(b5, lane, k), real ? quant_q5_0(r5[r * nb + i], k) + 16 : 0);
          QCOMPARE(legacy_panel_quant(b51, lane, k), real ? quant_q5_1(r51[r * nb + i], k) : 0);
        }
        QCOMPARE(b4.d[lane], real ? r4[r * nb + i].d : uint16_t{0});
        QCOMPARE(b5.d[lane], real ? r5[r * nb + i].d : uint16_t{0});
        QCOMPARE(b51.m[lane], real ? r51[r * nb + i].m : uint16_t{0});
      }
    }
  }

  // IQ4_NL, MXFP4: every element's level (the row format's own, quant_iq4_nl / quant_mxfp4) and
  // every scale, in the lane of its row; padding rows are zero.
  void levelPackingKeepsEveryLevel() {
    std::mt19937 rng(3);
    const int64_t rows = 19, cols = 96, nb = cols / kQK;
    const auto nl = random_matrix(GgmlType::IQ4_NL, rows, cols, rng);
    const auto fp4 = random_matrix(GgmlType::MXFP4, rows, cols, rng);
    const auto pnl = pack(GgmlType::IQ4_NL, nl, rows, cols);
    const auto pfp4 = pack(GgmlType::MXFP4, fp4, rows, cols);
    const auto* rnl = reinterpret_cast<const block_iq4_nl*>(nl.data());
    const auto* rfp4 = reinterpret_cast<const block_mxfp4*>(fp4.data());
    for (int64_t r = 0; r < 32; ++r)
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t at = (r / kPanelRows) * nb + i;
        const auto& bnl = reinterpret_cast<const panel_iq4_nl*>(pnl.data())[at];
        const auto& bfp4 = reinterpret_cast<const panel_mxfp4*>(pfp4.data())[at];
        const int lane = static_cast<int>(r % kPanelRows);
        if (r >= rows) {
          QCOMPARE(bnl.d[lane], uint16_t{0});
          QCOMPARE(bfp4.e[lane], uint8_t{0});
          QCOMPARE(panel_scale(bnl, lane), 0.0f);
          continue;
        }
        for (int k = 0; k < kQK; ++k) {
          QCOMPARE(panel_level(bnl, lane, k), quant_iq4_nl(rnl[r * nb + i], k));
          QCOMPARE(panel_level(bfp4, lane, k), quant_mxfp4(rfp4[r * nb + i], k));
        }
        QCOMPARE(panel_scale(bnl, lane), fp16_to_fp32(rnl[r * nb + i].d));
        QCOMPARE(panel_scale(bfp4, lane), e8m0_half(rfp4[r * nb + i].e));
      }
  }

  void fastKernelEqualsReferenceBitForBit_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    QTest::addColumn<qint64>("tokens");
    for (GgmlType type : kPanelTypes) {
      const char* name = ggml_type_name(static_cast<uint32_t>(type)).data();
      const int t = static_cast<int>(type);
      QTest::addRow("%s one block, one token", name) << t << qint64{16} << qint64{32} << qint64{1};
      QTest::addRow("%s partial panel", name) << t << qint64{21} << qint64{64} << qint64{3};
      QTest::addRow("%s 576 wide", name) << t << qint64{64} << qint64{576} << qint64{5};
      QTest::addRow("%s 1536 wide", name) << t << qint64{32} << qint64{1536} << qint64{4};
      QTest::addRow("%s a decode step", name) << t << qint64{48} << qint64{576} << qint64{16};
      QTest::addRow("%s every pass size", name) << t << qint64{37} << qint64{96} << qint64{23};
    }
  }
  void fastKernelEqualsReferenceBitForBit() {
    QFETCH(int, type);
    QFETCH(qint64, rows);
    QFETCH(qint64, cols);
    QFETCH(qint64, tokens);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(static_cast<uint32_t>(rows * 7 + cols + tokens + type));
    const auto packed = pack(t, random_matrix(t, rows, cols, rng), rows, cols);
    const auto act = random_activations(t, tokens, cols, rng);
    const auto expected = multiply(kReference, t, packed, rows, cols, act, tokens, tokens);
    // Every kernel, whatever else the call holds (one token per call, a few, or all at once:
    // the kernels take 8, 4, 2 or 1 per pass), with the activations compact or expanded.
    const std::string mismatch = test::first_mismatch(test::simd_runs(true), t, packed, rows, cols, act.data(),
                                                      activation_row_size(t, cols), tokens, expected);
    QVERIFY2(mismatch.empty(), mismatch.c_str());
  }

  void panelDotAgreesWithVecDot_data() {
    QTest::addColumn<int>("type");
    for (GgmlType type : kPanelTypes) QTest::addRow("%s", ggml_type_name(static_cast<uint32_t>(type)).data()) << int(type);
  }
  void panelDotAgreesWithVecDot() {
    QFETCH(int, type);
    const auto t = static_cast<GgmlType>(type);
    std::mt19937 rng(7);
    const int64_t rows = 48, cols = 1536, tokens = 3;
    const auto m = random_matrix(t, rows, cols, rng);
    const auto packed = pack(t, m, rows, cols);
    const auto act = random_activations(t, tokens, cols, rng);
    const size_t act_bytes = activation_row_size(t, cols), row_bytes = ggml_row_size(t, cols);
    const auto got = multiply({false, default_panel_kernel(), true}, t, packed, rows, cols, act, tokens, tokens);
    for (int64_t k = 0; k < tokens; ++k) {
      for (int64_t r = 0; r < rows; ++r) {
        const float want = reference::vec_dot(t, cols, m.data() + row_bytes * r, act.data() + act_bytes * k);
        // Both sum the same exact block integers; only the float order differs (48 blocks).
        QVERIFY2(std::abs(got[k * rows + r] - want) <= 1e-5f * (1.0f + std::abs(want)),
                 qPrintable(QString("row %1 token %2: %3 vs %4").arg(r).arg(k).arg(got[k * rows + r]).arg(want)));
      }
    }
  }

  // The kernel list follows the CPU, so a build that silently lost a kernel fails here rather
  // than running the slower one unnoticed (and its bit-for-bit test with it).
  void kernelsFollowTheCpu() {
    const std::vector<PanelKernel> kernels = available_panel_kernels();
    QCOMPARE(kernels.front(), PanelKernel::kScalar);
    QCOMPARE(default_panel_kernel(), kernels.back());
    auto has = [&](PanelKernel k) { return std::find(kernels.begin(), kernels.end(), k) != kernels.end(); };
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    QCOMPARE(has(PanelKernel::kAvx2), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                                          __builtin_cpu_supports("f16c"));
    QCOMPARE(has(PanelKernel::kAvx512Vnni),
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c"));
#endif
    for (PanelKernel k : {PanelKernel::kAvx2, PanelKernel::kAvx512Vnni}) {
      if (has(k)) continue;
      QVERIFY_THROWS_EXCEPTION(Error, panel_expanded_row_bytes(GgmlType::Q4_1, 32, k));
    }
  }

  void unsupportedInputIsAnError() {
    std::vector<uint8_t> dst(4096);
    std::vector<uint8_t> w(4096);
    QVERIFY(!panel_supported(GgmlType::Q8_1));
    QVERIFY_THROWS_EXCEPTION(Error, pack_panels(GgmlType::Q8_1, w.data(), 36, 2, 64, dst.data()));
    QVERIFY_THROWS_EXCEPTION(Error, pack_panels(GgmlType::Q4_1, w.data(), 20, 2, 48, dst.data()));
    QVERIFY_THROWS_EXCEPTION(Error, panel_matrix_bytes(GgmlType::Q4_1, 2, 0));
  }
};

QTEST_APPLESS_MAIN(TestQuantPanel)
#include "test_quant_panel.moc"
