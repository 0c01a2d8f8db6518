// Tensor formats on the CPU: dequantization against the gguf package, the SIMD paths against
// the scalar reference, and the dot products against float math with stated error bounds.

#include <QCryptographicHash>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "engine/common/error.h"
#include "engine/common/float16.h"
#include "engine/quant/quant.h"
#include "engine/quant/quant_blocks.h"

using namespace pagedchat;

namespace {

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                                 GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                                 GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q2_K,
                                 GgmlType::Q3_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

const char* name_of(GgmlType type) { return ggml_type_name(static_cast<uint32_t>(type)).data(); }

int64_t block_size(GgmlType type) { return ggml_type_traits(type).block_size; }

bool is_float_type(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16;
}

// Row lengths to try: some one-block rows and the model sizes (576, 1536).
std::vector<int64_t> lengths_for(GgmlType type) {
  if (is_float_type(type)) return {1, 7, 15, 16, 17, 24, 576, 1537};
  if (block_size(type) == kQKK) return {256, 512, 1536, 4096};
  return {32, 64, 96, 576, 1536, 4096};
}

QByteArray read_reference(const QString& file) {
  const QString dir = qEnvironmentVariable("PAGEDCHAT_REFERENCE_DIR");
  QFile f(dir + "/quant/" + file);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return f.readAll();
}

// Byte offsets of the fp16 scale fields of a block; `negative_in_formula` lists the fields
// that enter the value with a minus sign (dmin in x = d scale q - dmin min).
struct HalfFields {
  std::vector<size_t> offsets;
  std::vector<size_t> negative_in_formula;
};

HalfFields half_fields(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0: return {{offsetof(block_q4_0, d)}, {}};
    case GgmlType::Q4_1: return {{offsetof(block_q4_1, d), offsetof(block_q4_1, m)}, {}};
    case GgmlType::Q5_0: return {{offsetof(block_q5_0, d)}, {}};
    case GgmlType::Q5_1: return {{offsetof(block_q5_1, d), offsetof(block_q5_1, m)}, {}};
    case GgmlType::Q8_0: return {{offsetof(block_q8_0, d)}, {}};
    case GgmlType::Q4_K: return {{offsetof(block_q4_K, d)}, {offsetof(block_q4_K, dmin)}};
    case GgmlType::Q5_K: return {{offsetof(block_q5_K, d)}, {offsetof(block_q5_K, dmin)}};
    case GgmlType::Q6_K: return {{offsetof(block_q6_K, d)}, {}};
    case GgmlType::Q2_K: return {{offsetof(block_q2_K, d)}, {offsetof(block_q2_K, dmin)}};
    case GgmlType::Q3_K: return {{offsetof(block_q3_K, d)}, {}};
    case GgmlType::IQ4_NL: return {{offsetof(block_iq4_nl, d)}, {}};
    case GgmlType::IQ4_XS: return {{offsetof(block_iq4_xs, d)}, {}};
    default: return {};  // MXFP4's scale is a power of two (random_weights sets it)
  }
}

void put_half(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// A weight row like a model's: random quants, scales of trained-weight size (|w| ~ 0.01-0.1).
std::vector<uint8_t> random_weights(GgmlType type, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> row(ggml_row_size(type, n));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  if (type == GgmlType::F32) {
    for (int64_t j = 0; j < n; ++j) {
      const float v = normal(rng);
      std::memcpy(row.data() + 4 * j, &v, 4);
    }
    return row;
  }
  if (type == GgmlType::F16 || type == GgmlType::BF16) {
    for (int64_t j = 0; j < n; ++j) {
      const float v = normal(rng);
      const uint16_t h = type == GgmlType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
      std::memcpy(row.data() + 2 * j, &h, 2);
    }
    return row;
  }
  const size_t type_size = ggml_type_traits(type).type_size;
  const HalfFields fields = half_fields(type);
  const float d_range = block_size(type) == kQKK ? 0.002f : 0.02f;  // K scales multiply 0..63
  for (size_t b = 0; b < row.size(); b += type_size) {
    for (size_t off : fields.offsets) {
      const bool d_field = off == 0 || type == GgmlType::Q6_K || type == GgmlType::Q2_K || type == GgmlType::Q3_K;
      const float sign = d_field ? (byte(rng) & 1 ? 1.0f : -1.0f) : -1.0f;
      const bool is_min = (type == GgmlType::Q4_1 || type == GgmlType::Q5_1) && off == 2;
      put_half(row.data() + b + off, is_min ? -0.2f * uniform(rng) : sign * d_range * (0.1f + uniform(rng)));
    }
    for (size_t off : fields.negative_in_formula) put_half(row.data() + b + off, d_range * uniform(rng));
    if (type == GgmlType::MXFP4) row[b] = static_cast<uint8_t>(118 + byte(rng) % 6);  // 2^-10 .. 2^-5
  }
  return row;
}

// |w_j| with every term of its formula counted positive (|d q| + |m|, |d scale q| + |dmin min|):
// a bound on the size of each partial sum the dot products form.
std::vector<double> weight_magnitudes(GgmlType type, const std::vector<uint8_t>& row, int64_t n) {
  std::vector<uint8_t> copy = row;
  if (!is_float_type(type)) {
    const size_t type_size = ggml_type_traits(type).type_size;
    const HalfFields fields = half_fields(type);
    for (size_t b = 0; b < copy.size(); b += type_size) {
      for (size_t off : fields.offsets) copy[b + off + 1] &= 0x7f;               // d, m >= 0
      for (size_t off : fields.negative_in_formula) copy[b + off + 1] |= 0x80;  // -dmin >= 0
    }
  }
  std::vector<float> values(n);
  reference::dequantize_row(type, copy.data(), values.data(), n);
  std::vector<double> magnitudes(n);
  for (int64_t j = 0; j < n; ++j) magnitudes[j] = std::fabs(static_cast<double>(values[j]));
  return magnitudes;
}

// Activations: normal values with a few outliers, as hidden states have.
std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 31);
  std::vector<float> x(n);
  for (auto& v : x) v = pick(rng) == 0 ? 20.0f * normal(rng) : normal(rng);
  return x;
}

std::vector<uint8_t> prepare_activations(GgmlType weight_type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> a(activation_row_size(weight_type, n));
  reference::quantize_activation_row(weight_type, x.data(), a.data(), n);
  return a;
}

std::vector<float> dequantized_activations(GgmlType weight_type, const std::vector<uint8_t>& a, int64_t n) {
  std::vector<float> values(n);
  const GgmlType act_type = dot_activation_type(weight_type);
  if (act_type == GgmlType::F32) {
    std::memcpy(values.data(), a.data(), n * sizeof(float));
  } else {
    reference::dequantize_row(act_type, a.data(), values.data(), n);
  }
  return values;
}

// The scale of the activation block holding element j.
double activation_scale(GgmlType weight_type, const std::vector<uint8_t>& a, int64_t j) {
  switch (dot_activation_type(weight_type)) {
    case GgmlType::Q8_0: return fp16_to_fp32(reinterpret_cast<const block_q8_0*>(a.data())[j / kQK].d);
    case GgmlType::Q8_1: return fp16_to_fp32(reinterpret_cast<const block_q8_1*>(a.data())[j / kQK].d);
    case GgmlType::Q8_K: return reinterpret_cast<const block_q8_K*>(a.data())[j / kQKK].d;
    default: return 0.0;
  }
}

// Error bound for a float sum whose partial sums are all bounded by `magnitude`, formed by
// `steps` roundings one after another: gamma_steps * magnitude, gamma_k = k u / (1 - k u).
double rounding_bound(int64_t steps, double magnitude) {
  const double u = std::ldexp(1.0, -24);
  return steps * u / (1.0 - steps * u) * magnitude;
}

// The longest chain of roundings in either dot product path: per block (or element, for float
// weights) at most two additions into a running sum, plus a few to form a term and to add up
// the SIMD lanes at the end.
int64_t rounding_steps(GgmlType type, int64_t n) { return 2 * (n / block_size(type)) + 8; }

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

class TestQuant : public QObject {
  Q_OBJECT

 private slots:
  void simdPathIsTheBuildsBest();
  void float16ConversionsMatchNumpy();
  void referenceDequantizeMatchesGguf();
  void fastDequantizeMatchesReference();
  void dequantizationIsLlamaCppsBitForBit();
  void activationQuantizationIsIdenticalAndBounded();
  void fastDotMatchesReference();
  void referenceDotMatchesFloatMath();
  void vecDotRowsMatchesVecDotBitForBit();
  void badTypesAndLengthsAreErrors();
};

void TestQuant::simdPathIsTheBuildsBest() {
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
  QCOMPARE(QByteArray(quant_simd_name()), QByteArray("avx2"));
#else
  QVERIFY(QByteArray(quant_simd_name()) == "avx2" || QByteArray(quant_simd_name()) == "scalar");
#endif
}

void TestQuant::float16ConversionsMatchNumpy() {
  // fp16 -> fp32 -> fp16 is the identity on every non-NaN half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;
    QCOMPARE(fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h))), static_cast<uint16_t>(h));
    QCOMPARE(fp32_to_bf16(bf16_to_fp32(static_cast<uint16_t>(h))), static_cast<uint16_t>(h));
  }
  QCOMPARE(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  QCOMPARE(fp16_to_fp32(0xfbff), -65504.0f);
  // fp32 -> fp16 / bf16 against numpy's and gguf's rounding (nearest even, ties included).
  for (const char* kind : {"fp16", "bf16"}) {
    const QByteArray in = read_reference(QString("%1_in.f32").arg(kind));
    const QByteArray out = read_reference(QString("%1_out.u16").arg(kind));
    QVERIFY2(!in.isEmpty() && in.size() == 2 * out.size(), "run tests/reference/make_quant.py");
    const auto* x = reinterpret_cast<const float*>(in.constData());
    const auto* expected = reinterpret_cast<const uint16_t*>(out.constData());
    for (qsizetype i = 0; i < out.size() / 2; ++i) {
      const uint16_t got = kind[0] == 'f' ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
      if (got != expected[i]) {
        QFAIL(qPrintable(QString("%1(%2) = 0x%3, numpy 0x%4").arg(kind).arg(double(x[i]), 0, 'g', 9)
                             .arg(got, 4, 16, QChar('0')).arg(expected[i], 4, 16, QChar('0'))));
      }
    }
  }
}

void TestQuant::referenceDequantizeMatchesGguf() {
  for (GgmlType type : kWeightTypes) {
    const QByteArray raw = read_reference(QString("%1.raw").arg(name_of(type)));
    const QByteArray expected = read_reference(QString("%1.f32").arg(name_of(type)));
    QVERIFY2(!raw.isEmpty(), "run tests/reference/make_quant.py");
    const auto traits = ggml_type_traits(type);
    const int64_t n = raw.size() / static_cast<int64_t>(traits.type_size) * traits.block_size;
    QCOMPARE(expected.size(), n * 4);
    std::vector<float> got(n);
    reference::dequantize_row(type, raw.constData(), got.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      float want;
      std::memcpy(&want, expected.constData() + 4 * j, 4);
      if (!same_bits(got[j], want)) {
        QFAIL(qPrintable(QString("%1 element %2: %3, gguf %4").arg(name_of(type)).arg(j)
                             .arg(double(got[j]), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
      }
    }
  }
}

void TestQuant::fastDequantizeMatchesReference() {
  for (GgmlType type : kWeightTypes) {
    const QByteArray raw = read_reference(QString("%1.raw").arg(name_of(type)));
    QVERIFY2(!raw.isEmpty(), "run tests/reference/make_quant.py");
    const auto traits = ggml_type_traits(type);
    const int64_t n = raw.size() / static_cast<int64_t>(traits.type_size) * traits.block_size;
    // At an odd address too: rows of a tensor need not be aligned.
    std::vector<uint8_t> shifted(raw.size() + 1);
    std::memcpy(shifted.data() + 1, raw.constData(), raw.size());
    std::vector<float> want(n), got(n), got_shifted(n);
    reference::dequantize_row(type, raw.constData(), want.data(), n);
    dequantize_row(type, raw.constData(), got.data(), n);
    dequantize_row(type, shifted.data() + 1, got_shifted.data(), n);
    QVERIFY2(std::memcmp(want.data(), got.data(), n * 4) == 0, name_of(type));
    QVERIFY2(std::memcmp(want.data(), got_shifted.data(), n * 4) == 0, name_of(type));
  }
}

// The formats that came with mixtures of experts, against llama.cpp's own dequantize_row_*
// (tests/reference/llamacpp_reference.py ran it on make_quant.py's blocks and kept the sha256
// of its floats): ours, fast path and reference, give the same bytes.
void TestQuant::dequantizationIsLlamaCppsBitForBit() {
  QFile file(qEnvironmentVariable("PAGEDCHAT_TEST_DATA") + "/llamacpp/quant_formats.json");
  QVERIFY2(file.open(QIODevice::ReadOnly), "tests/data/llamacpp/quant_formats.json is missing");
  const QJsonObject formats = QJsonDocument::fromJson(file.readAll()).object()["formats"].toObject();
  QCOMPARE(formats.keys(), (QStringList{"IQ4_NL", "IQ4_XS", "MXFP4", "Q2_K", "Q3_K"}));
  for (const QString& name : formats.keys()) {
    const QJsonObject f = formats[name].toObject();
    const QByteArray raw = read_reference(name + ".raw");
    QVERIFY2(QCryptographicHash::hash(raw, QCryptographicHash::Sha256).toHex() == f["raw_sha256"].toString().toLatin1(),
             qPrintable(name + ": make_quant.py's blocks are not the ones llama.cpp dequantized; rerun llamacpp_reference.py"));
    GgmlType type = GgmlType::F32;
    for (GgmlType t : kWeightTypes)
      if (name == name_of(t)) type = t;
    const int64_t n = f["elements"].toInteger();
    QCOMPARE(static_cast<qsizetype>(ggml_row_size(type, n)), raw.size());
    std::vector<float> fast(n), ref(n);
    dequantize_row(type, raw.constData(), fast.data(), n);
    reference::dequantize_row(type, raw.constData(), ref.data(), n);
    for (const std::vector<float>* values : {&fast, &ref}) {
      const QByteArray bytes(reinterpret_cast<const char*>(values->data()), static_cast<qsizetype>(n * sizeof(float)));
      QVERIFY2(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex() == f["llama_cpp_f32_sha256"].toString().toLatin1(),
               qPrintable(name + (values == &fast ? ": the fast path" : ": the reference") + " differs from llama.cpp"));
    }
  }
}

void TestQuant::activationQuantizationIsIdenticalAndBounded() {
  std::mt19937 rng(7);
  // One weight type per activation format: Q8_0, Q8_1, Q8_K, F32.
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::F16}) {
    for (int64_t n : {int64_t{256}, int64_t{1536}, int64_t{4096}}) {
      std::vector<float> x = random_activations(n, rng);
      for (int j = 0; j < 32; ++j) x[32 + j] = 0.0f;  // an all-zero block
      // A block with scale exactly 1 (amax 127) and every other value a tie: -15.5 .. 14.5.
      for (int j = 0; j < 32; ++j) x[64 + j] = j == 0 ? 127.0f : static_cast<float>(j - 16) + 0.5f;
      std::vector<uint8_t> want = prepare_activations(type, x), got(want.size(), 0xcd);
      quantize_activation_row(type, x.data(), got.data(), n);
      QVERIFY2(want == got, name_of(type));
      // Each element is within half a step of its block scale: |x - d q| <= d / 2 (plus the
      // rounding of x * (1/d), at most a few ulps of 127).
      const std::vector<float> a = dequantized_activations(type, got, n);
      for (int64_t j = 0; j < n; ++j) {
        const double d = activation_scale(type, got, j);
        QVERIFY(std::fabs(double(x[j]) - a[j]) <= (dot_activation_type(type) == GgmlType::F32 ? 0.0 : 0.5001 * d));
      }
    }
  }
}

void TestQuant::fastDotMatchesReference() {
  // Both paths form the same exact integer block sums and the same scale products; they differ
  // only in how the float terms are added up (SIMD lanes and fma versus one running sum). Each
  // path's error is at most gamma_k * M, with k the longest chain of roundings and M the sum of
  // |w_j| |a_j| counting every term of the formulas positive (weight_magnitudes), which bounds
  // every partial sum; so |fast - reference| <= 2 gamma_k M (1% slack for Q8_1's fp16 s).
  std::mt19937 rng(11);
  for (GgmlType type : kWeightTypes) {
    for (int64_t n : lengths_for(type)) {
      for (int trial = 0; trial < 4; ++trial) {
        const std::vector<uint8_t> w = random_weights(type, n, rng);
        const std::vector<uint8_t> a = prepare_activations(type, random_activations(n, rng));
        const std::vector<float> av = dequantized_activations(type, a, n);
        const std::vector<double> wm = weight_magnitudes(type, w, n);
        double magnitude = 0.0;
        for (int64_t j = 0; j < n; ++j) magnitude += wm[j] * std::fabs(double(av[j]));
        const double want = reference::vec_dot(type, n, w.data(), a.data());
        const double got = vec_dot(type, n, w.data(), a.data());
        const double bound = 2.0 * rounding_bound(rounding_steps(type, n), 1.01 * magnitude);
        if (!(std::fabs(got - want) <= bound)) {
          QFAIL(qPrintable(QString("%1 n=%2: fast %3, reference %4, bound %5").arg(name_of(type)).arg(n)
                               .arg(got, 0, 'g', 9).arg(want, 0, 'g', 9).arg(bound, 0, 'g', 3)));
        }
      }
    }
  }
}

void TestQuant::referenceDotMatchesFloatMath() {
  // (a) Against sum_j w_j a_j in double over the dequantized weight and activation rows: only
  // float rounding differs (gamma_k M), except for Q8_1, whose block sum s = fp16(d sum q)
  // carries a relative error of at most 2^-11 (+ 2^-24 for the product), times |m|.
  // (b) Against the float activations x themselves, the quantization error adds
  // sum_j |w_j| |x_j - a_j| <= sum_j |w_j| 0.5001 d_block(j).
  std::mt19937 rng(13);
  for (GgmlType type : kWeightTypes) {
    for (int64_t n : lengths_for(type)) {
      const std::vector<uint8_t> w = random_weights(type, n, rng);
      const std::vector<float> x = random_activations(n, rng);
      const std::vector<uint8_t> a = prepare_activations(type, x);
      const std::vector<float> av = dequantized_activations(type, a, n);
      std::vector<float> wv(n);
      reference::dequantize_row(type, w.data(), wv.data(), n);
      const std::vector<double> wm = weight_magnitudes(type, w, n);
      double exact = 0.0, exact_x = 0.0, magnitude = 0.0, s_error = 0.0, quant_error = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        exact += double(wv[j]) * av[j];
        exact_x += double(wv[j]) * x[j];
        magnitude += wm[j] * std::fabs(double(av[j]));
        quant_error += std::fabs(double(wv[j])) * 0.5001 * activation_scale(type, a, j);
      }
      if (dot_activation_type(type) == GgmlType::Q8_1) {
        const size_t type_size = ggml_type_traits(type).type_size;
        const auto* y = reinterpret_cast<const block_q8_1*>(a.data());
        for (int64_t b = 0; b < n / kQK; ++b) {
          uint16_t m;
          std::memcpy(&m, w.data() + b * type_size + 2, 2);  // Q4_1/Q5_1: m follows d
          double dq = 0.0;
          for (int j = 0; j < kQK; ++j) dq += std::fabs(double(fp16_to_fp32(y[b].d)) * y[b].qs[j]);
          s_error += std::fabs(double(fp16_to_fp32(m))) * (dq * (std::ldexp(1.0, -11) + std::ldexp(1.0, -23)) +
                                                           std::ldexp(1.0, -25));
        }
      }
      const double ref = reference::vec_dot(type, n, w.data(), a.data());
      const double bound_a = rounding_bound(rounding_steps(type, n), 1.01 * magnitude) + s_error;
      if (!(std::fabs(ref - exact) <= bound_a)) {
        QFAIL(qPrintable(QString("%1 n=%2: reference %3, float math %4, bound %5").arg(name_of(type)).arg(n)
                             .arg(ref, 0, 'g', 9).arg(exact, 0, 'g', 9).arg(bound_a, 0, 'g', 3)));
      }
      const double bound_b = bound_a + quant_error;
      if (!(std::fabs(ref - exact_x) <= bound_b)) {
        QFAIL(qPrintable(QString("%1 n=%2: reference %3, float activations %4, bound %5").arg(name_of(type))
                             .arg(n).arg(ref, 0, 'g', 9).arg(exact_x, 0, 'g', 9).arg(bound_b, 0, 'g', 3)));
      }
    }
  }
}

void TestQuant::vecDotRowsMatchesVecDotBitForBit() {
  std::mt19937 rng(17);
  constexpr int kRows = 12;
  for (GgmlType type : kWeightTypes) {
    const int64_t n = is_float_type(type) ? 37 : (block_size(type) == kQKK ? 768 : 576);
    const size_t row_bytes = ggml_row_size(type, n);
    const std::vector<uint8_t> a = prepare_activations(type, random_activations(n, rng));
    for (size_t extra : {size_t{0}, size_t{1}, size_t{7}, size_t{33}}) {
      const size_t stride = row_bytes + extra;
      // Rows start at an odd address and, with odd strides, at every alignment.
      std::vector<uint8_t> matrix(1 + stride * kRows);
      for (int r = 0; r < kRows; ++r) {
        const std::vector<uint8_t> row = random_weights(type, n, rng);
        std::memcpy(matrix.data() + 1 + r * stride, row.data(), row_bytes);
      }
      const uint8_t* base = matrix.data() + 1;
      std::vector<float> single(kRows);
      for (int r = 0; r < kRows; ++r) single[r] = vec_dot(type, n, base + r * stride, a.data());
      for (int first = 0; first < 3; ++first) {  // shifts each row's place in a group of rows
        for (int num_rows = 1; num_rows <= 9; ++num_rows) {
          std::vector<float> out(num_rows);
          vec_dot_rows(type, n, base + first * stride, stride, num_rows, a.data(), out.data());
          for (int r = 0; r < num_rows; ++r) {
            if (!same_bits(out[r], single[first + r])) {
              QFAIL(qPrintable(QString("%1 stride %2 rows %3: row %4 gives %5, vec_dot %6").arg(name_of(type))
                                   .arg(stride).arg(num_rows).arg(first + r).arg(double(out[r]), 0, 'g', 9)
                                   .arg(double(single[first + r]), 0, 'g', 9)));
            }
          }
        }
      }
    }
  }
}

void TestQuant::badTypesAndLengthsAreErrors() {
  std::vector<uint8_t> buffer(4096);
  std::vector<float> out(256);
  const auto iq2_xxs = static_cast<GgmlType>(16);  // a type of the format we do not run
  QVERIFY_THROWS_EXCEPTION(Error, dot_activation_type(iq2_xxs));
  QVERIFY_THROWS_EXCEPTION(Error, dot_activation_type(GgmlType::Q8_K));  // an activation format only
  QVERIFY_THROWS_EXCEPTION(Error, dequantize_row(iq2_xxs, buffer.data(), out.data(), 256));
  QVERIFY_THROWS_EXCEPTION(Error, vec_dot(GgmlType::IQ4_XS, 128, buffer.data(), buffer.data()));
  QVERIFY_THROWS_EXCEPTION(Error, vec_dot(GgmlType::Q4_0, 48, buffer.data(), buffer.data()));
  QVERIFY_THROWS_EXCEPTION(Error, activation_row_size(GgmlType::Q6_K, 128));
  QCOMPARE(activation_row_size(GgmlType::Q4_1, 64), size_t{72});
  QCOMPARE(activation_row_size(GgmlType::Q5_K, 512), size_t{584});
  QCOMPARE(activation_row_size(GgmlType::BF16, 3), size_t{12});
}

QTEST_APPLESS_MAIN(TestQuant)
#include "test_quant.moc"
