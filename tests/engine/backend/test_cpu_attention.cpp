// CPU paged attention (engine/backend/cpu/attention) on random K/V in every KV type:
// - every kernel this CPU has gives the scalar kernel's bits exactly;
// - a sequence's output is the same bits alone, in a batch, on 1, 2 or 3 threads (with and
//   without partition splits), and whether its tokens come as one prefill chunk or one by one;
// - each output is within float rounding of attention computed in double over the values the
//   pool holds (its KV type's rounding included);
// - with a sliding window, each token sees only its last W positions (the same checks);
// - attention sinks (gpt-oss) join each softmax's sum and add no value (the same checks);
// - the KV types store what they promise: f16 rounds to nearest, q8_0 stays within half a step.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/backend/cpu/attention/paged_attention.h"
#include "engine/backend/kv_type.h"
#include "engine/common/error.h"
#include "engine/common/float16.h"

using namespace pagedchat;
using namespace pagedchat::cpu;

namespace {

struct Shape {
  int num_heads, num_kv_heads, head_dim, block_size;
};

// A pool holding sequences of the given lengths on shuffled blocks, K/V random in [-2, 2).
struct Pool {
  Shape shape;
  KvPool kv;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int> lens;

  Pool(const Shape& s, KvType type, const std::vector<int>& seq_lens, uint32_t seed) : shape(s), lens(seq_lens) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    int blocks = 0;
    for (int len : lens) blocks += (len + s.block_size - 1) / s.block_size;
    std::vector<int32_t> ids(blocks + 3);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::shuffle(ids.begin(), ids.end(), rng);
    kv.allocate({1, s.num_kv_heads, s.head_dim, static_cast<int>(ids.size()), s.block_size}, type);
    size_t next = 0;
    std::vector<float> k(s.head_dim), v(s.head_dim);
    for (int len : lens) {
      const int n = (len + s.block_size - 1) / s.block_size;
      tables.emplace_back(ids.begin() + next, ids.begin() + next + n);
      next += n;
      for (int pos = 0; pos < len; ++pos)
        for (int h = 0; h < s.num_kv_heads; ++h) {
          for (int d = 0; d < s.head_dim; ++d) k[d] = u(rng), v[d] = u(rng);
          kv.store(0, slot(tables.back(), pos), h, k.data(), v.data());
        }
    }
  }
  int64_t slot(const std::vector<int32_t>& table, int pos) const {
    return static_cast<int64_t>(table[pos / shape.block_size]) * shape.block_size + pos % shape.block_size;
  }
  int q_row() const { return shape.num_heads * shape.head_dim; }
};

// One chunk of queries per sequence: its tokens [start, start + n), q from the seed.
struct Chunk {
  int seq, start, n;
};

std::vector<float> queries(const Pool& p, const Chunk& c, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(c.seq * 131 + c.start));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(c.n) * p.q_row());
  for (float& x : q) x = u(rng);
  return q;
}

// Runs the chunks as one batch; returns each chunk's output rows.
std::vector<std::vector<float>> run(const Pool& p, const std::vector<Chunk>& chunks, uint32_t seed, int threads,
                                    const AttentionKernel& kernel, int window = 0, const float* sinks = nullptr) {
  ForwardBatch batch;
  std::vector<float> q;
  for (const Chunk& c : chunks) {
    std::vector<int32_t> tokens(c.n, 1);
    batch.add_sequence(tokens.data(), c.n, c.start, p.tables[c.seq], p.shape.block_size, false);
    const std::vector<float> qc = queries(p, c, seed);
    q.insert(q.end(), qc.begin(), qc.end());
  }
  std::vector<float> out(q.size(), NAN);
  ThreadPool pool(threads);
  paged_attention(batch, p.kv, 0, {p.shape.num_heads, p.shape.num_kv_heads, p.shape.head_dim, 0.0f, window, sinks},
                  q.data(), out.data(), pool, kernel);
  std::vector<std::vector<float>> rows;
  size_t at = 0;
  for (const Chunk& c : chunks) {
    const size_t n = static_cast<size_t>(c.n) * p.q_row();
    rows.emplace_back(out.begin() + at, out.begin() + at + n);
    at += n;
  }
  return rows;
}

// Attention in double over the pool's decoded values (with a window: the last `window` positions;
// with sinks: head h's sinks[h] in the softmax's sum, as ggml's soft_max adds it).
std::vector<float> reference(const Pool& p, const Chunk& c, uint32_t seed, int window = 0, const float* sinks = nullptr) {
  const Shape& s = p.shape;
  const std::vector<float> q = queries(p, c, seed);
  std::vector<float> out(q.size());
  const int group = s.num_heads / s.num_kv_heads;
  std::vector<float> k(s.head_dim), v(s.head_dim);
  for (int i = 0; i < c.n; ++i)
    for (int h = 0; h < s.num_heads; ++h) {
      const int ctx = c.start + i + 1, lo = window > 0 ? std::max(0, ctx - window) : 0;
      const float* qh = q.data() + static_cast<size_t>(i) * p.q_row() + h * s.head_dim;
      std::vector<double> w(ctx), acc(s.head_dim, 0.0);
      double mx = -INFINITY, sum = 0.0;
      for (int j = lo; j < ctx; ++j) {
        decode_kv_row(p.kv.type(), p.kv.key_row(0, p.slot(p.tables[c.seq], j), h / group), k.data(), s.head_dim);
        double dot = 0.0;
        for (int d = 0; d < s.head_dim; ++d) dot += static_cast<double>(qh[d]) * k[d];
        w[j] = dot / std::sqrt(static_cast<double>(s.head_dim));
        mx = std::max(mx, w[j]);
      }
      for (int j = lo; j < ctx; ++j) {
        w[j] = std::exp(w[j] - mx);
        sum += w[j];
        decode_kv_row(p.kv.type(), p.kv.value_row(0, p.slot(p.tables[c.seq], j), h / group), v.data(), s.head_dim);
        for (int d = 0; d < s.head_dim; ++d) acc[d] += w[j] * v[d];
      }
      if (sinks) sum += std::exp(static_cast<double>(sinks[h]) - mx);
      for (int d = 0; d < s.head_dim; ++d)
        out[static_cast<size_t>(i) * p.q_row() + h * s.head_dim + d] = static_cast<float>(acc[d] / sum);
    }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const KvType kTypes[] = {KvType::F32, KvType::F16, KvType::Q8_0};

// Shapes: SmolLM2's GQA (9 / 3, 64), MHA at 128, Gemma 3's 256, 96 (Phi-3's), and two that
// leave the SIMD loops a tail: 40 (8 past the 32s and 16s) and 33 (odd: the even chain's last d).
// q8_0 runs where it fits (head sizes of 32s).
const Shape kShapes[] = {{9, 3, 64, 16}, {4, 4, 128, 8}, {4, 1, 256, 32}, {6, 2, 96, 4}, {3, 1, 40, 16}, {2, 2, 33, 16}};

}  // namespace

class TestCpuAttention : public QObject {
  Q_OBJECT

 private slots:
  void everyKernelGivesTheScalarBits() {
    const auto& kernels = attention_kernels();
    qInfo("attention kernels on this CPU: %d (fastest %s)", static_cast<int>(kernels.size()),
          std::string(default_attention_kernel().name).c_str());
    QCOMPARE(kernels.front()->name, std::string_view("scalar"));
    for (KvType type : kTypes)
      for (const Shape& s : kShapes) {
        if (!kv_type_fits(type, s.head_dim)) continue;
        // Lengths around tile (16) and partition (256) edges; a prefill chunk and decode tokens.
        Pool p(s, type, {1, 17, 300, 513, 40}, 5);
        const std::vector<Chunk> chunks = {{0, 0, 1}, {1, 0, 17}, {2, 299, 1}, {3, 480, 33}, {4, 23, 17}};
        const auto want = run(p, chunks, 9, 2, *kernels.front());
        for (const AttentionKernel* k : kernels) {
          const auto got = run(p, chunks, 9, 2, *k);
          for (size_t c = 0; c < chunks.size(); ++c)
            QVERIFY2(same_bits(got[c], want[c]), qPrintable(QString("kernel %1, %2 KV, head %3, chunk %4")
                                                                 .arg(QString::fromUtf8(k->name.data(), k->name.size()))
                                                                 .arg(kv_type_name(type))
                                                                 .arg(s.head_dim)
                                                                 .arg(c)));
        }
      }
  }

  void aSequenceIsTheSameAloneBatchedOrThreaded() {
    for (KvType type : kTypes) {
      const Shape s = kShapes[0];
      Pool p(s, type, {700, 90, 1200}, 6);
      // The long sequence's last 40 tokens as one prefill chunk, alone, on one thread.
      const Chunk mine{2, 1160, 40};
      const auto alone = run(p, {mine}, 3, 1, default_attention_kernel())[0];
      for (int threads : {2, 3}) {
        QVERIFY(same_bits(run(p, {mine}, 3, threads, default_attention_kernel())[0], alone));
        QVERIFY(same_bits(run(p, {{0, 699, 1}, mine, {1, 50, 40}}, 3, threads, default_attention_kernel())[1], alone));
      }
      // A decode token of the long sequence: split over partitions on 2 threads, whole on 1.
      const Chunk one{2, 1199, 1};
      QVERIFY(same_bits(run(p, {one}, 3, 2, default_attention_kernel())[0], run(p, {one}, 3, 1, default_attention_kernel())[0]));
    }
  }

  void tokensOfAChunkMatchTheSameQueriesAsDecodeSteps() {
    // Same q rows fed as one chunk of 20 and as 20 single-token batches: identical bits.
    const Shape s = kShapes[0];
    Pool p(s, KvType::F16, {600}, 8);
    const Chunk chunk{0, 560, 20};
    const std::vector<float> q = queries(p, chunk, 4);
    ForwardBatch batch;
    std::vector<int32_t> tokens(chunk.n, 1);
    batch.add_sequence(tokens.data(), chunk.n, chunk.start, p.tables[0], s.block_size, false);
    std::vector<float> out(q.size());
    ThreadPool pool(2);
    const AttentionShape as{s.num_heads, s.num_kv_heads, s.head_dim};
    paged_attention(batch, p.kv, 0, as, q.data(), out.data(), pool);
    const size_t row = static_cast<size_t>(p.q_row());
    for (int i = 0; i < chunk.n; ++i) {
      ForwardBatch one;
      one.add_sequence(tokens.data(), 1, chunk.start + i, p.tables[0], s.block_size, false);
      std::vector<float> o(row);
      paged_attention(one, p.kv, 0, as, q.data() + i * row, o.data(), pool);
      QVERIFY2(std::memcmp(o.data(), out.data() + i * row, row * sizeof(float)) == 0, qPrintable(QString::number(i)));
    }
  }

  void outputsMatchDoubleAttentionOverThePoolsValues() {
    for (KvType type : kTypes)
      for (const Shape& s : kShapes) {
        if (!kv_type_fits(type, s.head_dim)) continue;
        Pool p(s, type, {5, 270, 600}, 7);
        const std::vector<Chunk> chunks = {{0, 0, 5}, {1, 269, 1}, {2, 570, 30}};
        for (const AttentionKernel* k : attention_kernels()) {
          const auto got = run(p, chunks, 2, 2, *k);
          for (size_t c = 0; c < chunks.size(); ++c) {
            const std::vector<float> want = reference(p, chunks[c], 2);
            for (size_t i = 0; i < want.size(); ++i)
              QVERIFY2(std::fabs(got[c][i] - want[i]) <= 2e-5f + 2e-4f * std::fabs(want[i]),
                       qPrintable(QString("%1 KV, head %2, chunk %3, element %4: %5 vs %6")
                                      .arg(kv_type_name(type)).arg(s.head_dim).arg(c).arg(i).arg(got[c][i]).arg(want[i])));
          }
        }
      }
  }

  // Sliding windows (Gemma 3's local layers): each token sees its last W positions only, within
  // float rounding of double attention over them, for windows inside one tile, across tiles
  // and across partitions (whose earlier ones are then not read); every kernel gives the scalar
  // bits, and so do 1, 2 or 3 threads; a window that covers the context changes no bit.
  void aSlidingWindowSeesOnlyItsLastPositions() {
    for (const Shape& s : {kShapes[0], kShapes[2], kShapes[5]})
      for (KvType type : {KvType::F32, KvType::Q8_0}) {
        if (!kv_type_fits(type, s.head_dim)) continue;
        Pool p(s, type, {20, 300, 1100}, 11);
        // A prefill chunk that starts before the window slides and ends after; decode tokens
        // past one and several partitions; a chunk crossing a partition edge.
        const std::vector<Chunk> chunks = {{0, 0, 20}, {1, 299, 1}, {2, 1099, 1}, {2, 500, 40}};
        for (int window : {1, 5, 16, 17, 300, 512}) {
          const auto want_bits = run(p, chunks, 4, 2, *attention_kernels().front(), window);
          for (const AttentionKernel* k : attention_kernels())
            QVERIFY(run(p, chunks, 4, 2, *k, window) == want_bits);
          for (int threads : {1, 3}) QVERIFY(run(p, chunks, 4, threads, default_attention_kernel(), window) == want_bits);
          for (size_t c = 0; c < chunks.size(); ++c) {
            const std::vector<float> want = reference(p, chunks[c], 4, window);
            for (size_t i = 0; i < want.size(); ++i)
              QVERIFY2(std::fabs(want_bits[c][i] - want[i]) <= 2e-5f + 2e-4f * std::fabs(want[i]),
                       qPrintable(QString("window %1, %2 KV, head %3, chunk %4, element %5: %6 vs %7")
                                      .arg(window).arg(kv_type_name(type)).arg(s.head_dim).arg(c).arg(i)
                                      .arg(want_bits[c][i]).arg(want[i])));
          }
        }
        const std::vector<Chunk> first = {{0, 0, 20}};
        QVERIFY(same_bits(run(p, first, 4, 2, default_attention_kernel(), 20)[0], run(p, first, 4, 2, default_attention_kernel())[0]));
      }
  }

  // Attention sinks (gpt-oss): a logit per head in each softmax's sum, no value. Sinks far below,
  // near and far above the scores (one of 60 leaves almost nothing of the values), with and
  // without a window, split over partitions or not: within float rounding of double attention,
  // every kernel the scalar bits, a sequence alone the bits it has in a batch.
  void sinksJoinTheSumAndAddNoValue() {
    const Shape s = kShapes[0];
    const std::vector<float> sinks = {-30.0f, -1.0f, 0.0f, 0.5f, 2.0f, 3.0f, 8.0f, 60.0f, 1.5f};
    for (KvType type : {KvType::F32, KvType::F16}) {
      Pool p(s, type, {9, 300, 700}, 13);
      const std::vector<Chunk> chunks = {{0, 0, 9}, {1, 299, 1}, {2, 699, 1}, {2, 600, 20}};
      for (int window : {0, 8, 300}) {
        const auto want_bits = run(p, chunks, 5, 2, *attention_kernels().front(), window, sinks.data());
        for (const AttentionKernel* k : attention_kernels()) QVERIFY(run(p, chunks, 5, 2, *k, window, sinks.data()) == want_bits);
        QVERIFY(same_bits(run(p, {chunks[2]}, 5, 1, default_attention_kernel(), window, sinks.data())[0], want_bits[2]));
        for (size_t c = 0; c < chunks.size(); ++c) {
          const std::vector<float> want = reference(p, chunks[c], 5, window, sinks.data());
          for (size_t i = 0; i < want.size(); ++i)
            QVERIFY2(std::fabs(want_bits[c][i] - want[i]) <= 2e-5f + 2e-4f * std::fabs(want[i]),
                     qPrintable(QString("window %1, %2 KV, chunk %3, element %4: %5 vs %6")
                                    .arg(window).arg(kv_type_name(type)).arg(c).arg(i).arg(want_bits[c][i]).arg(want[i])));
        }
        // The sinks matter: without them the outputs differ (head 7's, whose sink dwarfs every score, most).
        QVERIFY(run(p, chunks, 5, 2, default_attention_kernel(), window)[0] != want_bits[0]);
      }
    }
  }

  void kvTypesStoreWhatTheyPromise() {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    const int hd = 64;
    std::vector<float> x(hd), y(hd);
    std::vector<uint8_t> row(static_cast<size_t>(kv_row_bytes(KvType::F32, hd)));
    QCOMPARE(kv_row_bytes(KvType::F32, hd), int64_t{256});
    QCOMPARE(kv_row_bytes(KvType::F16, hd), int64_t{128});
    QCOMPARE(kv_row_bytes(KvType::Q8_0, hd), int64_t{68});  // 2 blocks of 34
    QVERIFY(!kv_type_fits(KvType::Q8_0, 40));
    QVERIFY(kv_type_fits(KvType::F16, 40));
    for (int round = 0; round < 200; ++round) {
      for (float& v : x) v = u(rng) * (round % 7 == 0 ? 1e-3f : 1.0f);
      encode_kv_row(KvType::F32, x.data(), row.data(), hd);
      decode_kv_row(KvType::F32, row.data(), y.data(), hd);
      QVERIFY(same_bits(x, y));
      encode_kv_row(KvType::F16, x.data(), row.data(), hd);
      decode_kv_row(KvType::F16, row.data(), y.data(), hd);
      for (int d = 0; d < hd; ++d) QCOMPARE(y[d], fp16_to_fp32(fp32_to_fp16(x[d])));
      encode_kv_row(KvType::Q8_0, x.data(), row.data(), hd);
      decode_kv_row(KvType::Q8_0, row.data(), y.data(), hd);
      for (int b = 0; b < hd / 32; ++b) {
        uint16_t scale;
        std::memcpy(&scale, row.data() + 34 * b, 2);  // the block's stored step
        const float step = fp16_to_fp32(scale);
        for (int d = 32 * b; d < 32 * b + 32; ++d)
          QVERIFY2(std::fabs(y[d] - x[d]) <= 0.5f * step * 1.002f + 1e-7f, qPrintable(QString("%1 vs %2").arg(y[d]).arg(x[d])));
      }
    }
    // Names round-trip; a bad one is a clear error.
    for (KvType t : kTypes) QCOMPARE(parse_kv_type(kv_type_name(t)), t);
    QVERIFY_THROWS_EXCEPTION(Error, parse_kv_type("bf16"));
  }

  void aPoolRefusesATypeThatDoesNotFitTheHead() {
    KvPool kv;
    QVERIFY_THROWS_EXCEPTION(Error, kv.allocate({1, 2, 40, 4, 16}, KvType::Q8_0));
    kv.allocate({1, 2, 64, 4, 16}, KvType::Q8_0);
    QCOMPARE(kv.block_bytes(), uint64_t{2 * 16 * 2 * 68});
    QVERIFY_THROWS_EXCEPTION(Error, kv.key(0, 0, 0));  // float views are for f32 pools only
  }
};

QTEST_APPLESS_MAIN(TestCpuAttention)
#include "test_cpu_attention.moc"
