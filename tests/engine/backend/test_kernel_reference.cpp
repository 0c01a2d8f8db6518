// The CPU references of the CUDA kernels (kernels/reference/) against the CPU backend: K/V
// written by the reference KV write into an f16/bf16 HND pool, and the same (rounded) values
// in the CPU backend's f32 pool, give the same attention from the reference and from
// cpu::paged_attention, for batches mixing decode tokens and prefill chunks, GQA ratios, block
// sizes and random non-contiguous block tables. Also the host-side plans the kernels launch
// with (decode splits, swap runs) and the block copy reference.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "engine/backend/cpu/attention/paged_attention.h"
#include "engine/backend/cpu/kv_pool.h"
#include "kernels/common/decode_plan.h"
#include "kernels/common/kv_pool_bytes.h"
#include "kernels/reference/attention_reference.h"
#include "kernels/reference/block_copy_reference.h"
#include "kernels/reference/kv_write_reference.h"

using namespace pagedchat;
using namespace pagedchat::kernels;

namespace {

struct Case {
  int num_heads, num_kv_heads, head_dim, block_size;
  std::vector<std::pair<int, int>> seqs;  // (cached prefix length, new tokens)
};

// Runs one case: both pools filled, both attentions run, outputs compared.
void run_case(const Case& c, KvDtype dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int bs = c.block_size, hd = c.head_dim;
  int blocks_needed = 0;
  for (auto [prefix, n] : c.seqs) blocks_needed += (prefix + n + bs - 1) / bs;
  const int num_blocks = blocks_needed + 5;
  std::vector<int32_t> free(num_blocks);
  std::iota(free.begin(), free.end(), 0);
  std::shuffle(free.begin(), free.end(), rng);

  // The batch: each sequence's whole context is "new" for the KV write (so both pools hold it),
  // but only its last n tokens are queries.
  ForwardBatch all, queries;
  std::vector<int32_t> seq_lens;
  size_t next = 0;
  for (auto [prefix, n] : c.seqs) {
    const int len = prefix + n;
    std::vector<int32_t> table(free.begin() + next, free.begin() + next + (len + bs - 1) / bs);
    next += table.size();
    std::vector<int32_t> tokens(len, 1);
    all.add_sequence(tokens.data(), len, 0, table, bs, false);
    queries.add_sequence(tokens.data(), n, prefix, table, bs, true);
    seq_lens.push_back(len);
  }

  // K/V rows, rounded to the pool type first so both pools hold the same numbers.
  const int kv_row = c.num_kv_heads * hd;
  std::vector<float> k(static_cast<size_t>(all.num_tokens()) * kv_row), v(k.size());
  auto round = [&](float x) { return dtype == KvDtype::F16 ? KvF16::load(KvF16::store(x)) : KvBf16::load(KvBf16::store(x)); };
  for (float& x : k) x = round(2.0f * u(rng));
  for (float& x : v) x = round(u(rng));

  PagedKvView<uint16_t> dev = hnd_view<uint16_t>(num_blocks, c.num_kv_heads, bs, hd);
  std::vector<uint16_t> dk(static_cast<size_t>(dev.pool_elements()), 0xffff), dv(dk.size(), 0xffff);  // NaN filled
  dev.k = dk.data();
  dev.v = dv.data();
  kv_write_reference(dev, dtype, {k.data(), v.data(), all.slot_mapping.data(), all.num_tokens()});

  KvCacheShape shape;
  shape.num_layers = 1;
  shape.num_kv_heads = c.num_kv_heads;
  shape.head_dim = hd;
  shape.num_blocks = num_blocks;
  shape.block_size = bs;
  cpu::KvPool pool;
  pool.allocate(shape);
  for (int t = 0; t < all.num_tokens(); ++t)
    for (int h = 0; h < c.num_kv_heads; ++h)
      for (int d = 0; d < hd; ++d) {
        const size_t i = static_cast<size_t>(t) * kv_row + h * hd + d;
        pool.key(0, all.slot_mapping[t], h)[d] = k[i];
        pool.value(0, all.slot_mapping[t], h)[d] = v[i];
        // The reference write put the same value at the same slot.
        const uint16_t stored = dk[dev.slot_offset(all.slot_mapping[t], h) + d];
        QCOMPARE(dtype == KvDtype::F16 ? KvF16::load(stored) : KvBf16::load(stored), k[i]);
      }

  const int q_row = c.num_heads * hd;
  std::vector<float> q(static_cast<size_t>(queries.num_tokens()) * q_row);
  for (float& x : q) x = u(rng);
  std::vector<float> want(q.size()), got(q.size(), NAN), got_f32(q.size(), NAN);
  ThreadPool threads(2);
  cpu::paged_attention(queries, pool, 0, {c.num_heads, c.num_kv_heads, hd}, q.data(), want.data(), threads);

  PagedKvView<const uint16_t> view{dev.k, dev.v, dev.stride_block, dev.stride_head, dev.stride_slot, num_blocks,
                                   c.num_kv_heads, bs, hd, queries.block_tables.data(), queries.max_blocks_per_seq};
  AttentionRows rows{q.data(), got.data(), queries.cu_seqlens_q.data(), seq_lens.data(), queries.num_seqs(),
                     c.num_heads, 1.0f / std::sqrt(static_cast<float>(hd))};
  attention_reference(view, dtype, rows);
  // The reference also reads the CPU pool itself, through an HND f32 view (its layout too).
  PagedKvView<const float> cpu_view = hnd_view<const float>(num_blocks, c.num_kv_heads, bs, hd);
  cpu_view.k = pool.key(0, 0, 0);
  cpu_view.v = pool.value(0, 0, 0);
  cpu_view.block_tables = queries.block_tables.data();
  cpu_view.block_table_stride = queries.max_blocks_per_seq;
  rows.out = got_f32.data();
  attention_reference(cpu_view, rows);

  for (size_t i = 0; i < want.size(); ++i) {
    QVERIFY2(std::fabs(got[i] - want[i]) <= 1e-5f + 1e-4f * std::fabs(want[i]),
             qPrintable(QString("element %1: reference %2, cpu %3").arg(i).arg(got[i]).arg(want[i])));
    QCOMPARE(got_f32[i], got[i]);  // same numbers in both pools, same double math
  }
}

}  // namespace

class TestKernelReference : public QObject {
  Q_OBJECT
 private slots:
  void decodeBatchMatchesCpuAttention() {
    for (KvDtype dt : {KvDtype::BF16, KvDtype::F16})
      for (int bs : {8, 16, 32}) {
        run_case({8, 2, 64, bs, {{0, 1}, {40, 1}, {bs - 1, 1}, {3 * bs, 1}, {200, 1}}}, dt, 11 + bs);
        run_case({6, 6, 128, bs, {{17, 1}, {0, 1}, {100, 1}}}, dt, 12 + bs);  // MHA
      }
  }

  void prefillChunksOverCachedPrefixMatchCpuAttention() {
    for (KvDtype dt : {KvDtype::BF16, KvDtype::F16})
      for (int bs : {4, 16, 32}) {
        run_case({9, 3, 64, bs, {{0, 20}, {33, 7}, {5, 1}, {64, 64}}}, dt, 21 + bs);  // SmolLM2-like GQA 3
        run_case({4, 1, 256, bs, {{10, 9}, {0, 3}}}, dt, 22 + bs);                     // Gemma-3-like, hd 256
      }
  }

  void decodePlanCoversTheContextWithoutEmptySplits() {
    for (int seqs : {1, 3, 16, 64, 256})
      for (int len : {1, 31, 32, 255, 256, 257, 512, 2048, 8192, 32768})
        for (auto [heads, kv_heads] : {std::pair{32, 8}, {9, 3}, {14, 2}, {16, 16}, {64, 4}}) {
          const DecodePlan p = plan_decode(seqs, heads, kv_heads, 128, len, 132);
          QVERIFY(p.head_tile >= 1 && p.head_tile <= 8);
          QVERIFY(p.head_tile * p.head_tiles >= heads / kv_heads);
          QVERIFY((p.head_tiles - 1) * p.head_tile < heads / kv_heads);
          QCOMPARE(p.partition_size % 32, 0);
          QVERIFY(static_cast<int64_t>(p.partition_size) * p.num_splits >= len);
          QVERIFY(static_cast<int64_t>(p.partition_size) * (p.num_splits - 1) < len);  // the last split has work
          QVERIFY(p.num_splits <= (len + kDecodeMinPartition - 1) / kDecodeMinPartition);  // splits of >= ~128 tokens
          QCOMPARE(p.workspace_bytes, p.num_splits == 1 ? 0 : int64_t(seqs) * heads * p.num_splits * 130 * 4);
        }
    // A single long sequence is split to fill the GPU; a big batch is not split.
    QVERIFY(plan_decode(1, 32, 8, 128, 32768, 132).num_splits > 8);
    QCOMPARE(plan_decode(256, 32, 8, 128, 2048, 132).num_splits, 1);
  }

  void swapRunsMergeConsecutivePairsOnly() {
    std::vector<BlockCopy> pairs = {{3, 10}, {4, 11}, {5, 12}, {9, 13}, {10, 14}, {2, 1}, {3, 0}};
    std::vector<BlockRun> runs = plan_block_runs(pairs.data(), pairs.size());
    QCOMPARE(runs.size(), size_t(4));
    QCOMPARE(runs[0].count, 3);
    QCOMPARE(runs[1].src, 9);
    QCOMPARE(runs[1].count, 2);
    QCOMPARE(runs[2].dst, 1);
    QCOMPARE(runs[3].dst, 0);
    QVERIFY(plan_block_runs(nullptr, 0).empty());
  }

  // Every chunk (layer, K/V) of each pair moves, nothing else does; host and device pools may
  // have different block counts (chunk strides).
  void blockCopyMovesEveryChunkOfEachPair() {
    const int layers = 3, block_bytes = 32;
    std::vector<uint8_t> dev(static_cast<size_t>(2 * layers * 8 * block_bytes)), host(static_cast<size_t>(2 * layers * 4 * block_bytes), 0);
    std::iota(dev.begin(), dev.end(), uint8_t(0));
    const KvPoolBytes d = packed_kv_pool_bytes(dev.data(), layers, 8, block_bytes);
    const KvPoolBytes h = packed_kv_pool_bytes(host.data(), layers, 4, block_bytes);
    std::vector<BlockCopy> out = {{6, 1}, {2, 3}};
    copy_blocks_reference(d, h, out.data(), out.size());
    for (int c = 0; c < 2 * layers; ++c) {
      QVERIFY(std::equal(d.block(c, 6), d.block(c, 6) + block_bytes, h.block(c, 1)));
      QVERIFY(std::equal(d.block(c, 2), d.block(c, 2) + block_bytes, h.block(c, 3)));
      QVERIFY(std::all_of(h.block(c, 0), h.block(c, 0) + block_bytes, [](uint8_t b) { return b == 0; }));
    }
  }
};

QTEST_APPLESS_MAIN(TestKernelReference)
#include "test_kernel_reference.moc"
