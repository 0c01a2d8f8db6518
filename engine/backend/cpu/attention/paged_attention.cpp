// The attention planner: work items, partition splits, the fold of partial softmax states.
#include "engine/backend/cpu/attention/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/common/exp_approx.h"

namespace pagedchat::cpu {
namespace {

constexpr int kQueryTile = 16;  // prefill tokens sharing each key tile they read
constexpr int kPrefetchKeys = 2 * kTileKeys;
// The score of a key outside a token's window: finite (the kernels' max wants finite scores),
// far below any real one, so exp_approx of it minus the row's max is exactly 0.
constexpr float kMaskedScore = -3.0e38f;

// One (sequence, KV head, tile of consecutive query tokens).
struct Item {
  int seq = 0, kv_head = 0;
  int t0 = 0, num_tokens = 0;  // batch rows [t0, t0 + num_tokens)
  int ctx = 0;                 // keys the tile reads: its last token's position + 1
  int key_lo = 0;              // the first key any of its tokens sees (0 without a window)
  int parts = 0;               // partitions of ctx
  int part_lo = 0;             // the partition of key_lo: those before it are not read
  int splits = 1;              // 1: one task folds every partition; else partials are stored
  size_t partials = 0;         // splits > 1: offset of [parts][rows][2 + head_dim] in the store
};

struct Task {
  int item = 0;
  int part_begin = 0, part_end = 0;
};

int parts_of(int ctx) { return (ctx + kPartitionKeys - 1) / kPartitionKeys; }

// (tm, tl, tacc) := the fold of (pm, pl, pacc) into it; a left fold over a query's partitions
// in position order, whichever task computed them.
void fold(float& tm, float& tl, float* tacc, float pm, float pl, const float* pacc, int hd, bool first) {
  if (first) {
    tm = pm;
    tl = pl;
    std::copy_n(pacc, hd, tacc);
    return;
  }
  const float m = std::max(tm, pm);
  const float a = exp_approx(tm - m), b = exp_approx(pm - m);
  tl = std::fma(tl, a, pl * b);
  for (int d = 0; d < hd; ++d) tacc[d] = std::fma(tacc[d], a, pacc[d] * b);
  tm = m;
}

struct Planner {
  const ForwardBatch& batch;
  const KvPool& kv;
  int layer;
  AttentionShape shape;
  const float* q;
  float* out;
  const AttentionKernel& kernel;
  std::vector<float>& store;  // partial states of split items
  int group;
  float scale;
  std::vector<Item> items;
  std::vector<Task> tasks;

  int rows(const Item& it) const { return it.num_tokens * group; }
  int ctx_of(int t) const { return batch.positions[t] + 1; }
  // The first key token t sees.
  int lo_of(int t) const { return shape.window > 0 ? std::max(0, ctx_of(t) - shape.window) : 0; }
  // Whether token t sees any key of partition p, and whether p is the first it sees.
  bool sees(int t, int p) const { return ctx_of(t) > p * kPartitionKeys && lo_of(t) < (p + 1) * kPartitionKeys; }
  int first_part(int t) const { return lo_of(t) / kPartitionKeys; }

  void plan(int num_threads) {
    int64_t total_work = 0;
    for (int s = 0; s < batch.num_seqs(); ++s)
      for (int t0 = batch.cu_seqlens_q[s]; t0 < batch.cu_seqlens_q[s + 1]; t0 += kQueryTile)
        for (int h = 0; h < shape.num_kv_heads; ++h) {
          Item it;
          it.seq = s;
          it.kv_head = h;
          it.t0 = t0;
          it.num_tokens = std::min(kQueryTile, batch.cu_seqlens_q[s + 1] - t0);
          for (int i = 0; i < it.num_tokens; ++i) it.ctx = std::max(it.ctx, ctx_of(t0 + i));
          it.key_lo = lo_of(t0);  // tokens are in position order: the first sees the earliest key
          it.parts = parts_of(it.ctx);
          it.part_lo = it.key_lo / kPartitionKeys;
          total_work += static_cast<int64_t>(rows(it)) * (it.ctx - it.key_lo);
          items.push_back(it);
        }
    // Split the items that hold more than an eighth of a thread's share into partition ranges.
    const int64_t share = std::max<int64_t>(1, total_work / (8 * num_threads));
    size_t offset = 0;
    for (int i = 0; i < static_cast<int>(items.size()); ++i) {
      Item& it = items[i];
      const int64_t work = static_cast<int64_t>(rows(it)) * (it.ctx - it.key_lo);
      const int read = it.parts - it.part_lo;  // partitions read
      it.splits = num_threads == 1 ? 1 : static_cast<int>(std::clamp<int64_t>((work + share - 1) / share, 1, read));
      if (it.splits > 1) {
        it.partials = offset;
        offset += static_cast<size_t>(it.parts) * rows(it) * (2 + shape.head_dim);
      }
      for (int k = 0; k < it.splits; ++k)
        tasks.push_back({i, it.part_lo + read * k / it.splits, it.part_lo + read * (k + 1) / it.splits});
    }
    if (store.size() < offset) store.resize(offset);
  }

  void run(const Task& task) const {
    const Item& it = items[task.item];
    const int hd = shape.head_dim, nr = rows(it), block_size = kv.shape().block_size;
    const int32_t* table = batch.block_table(it.seq);
    thread_local std::vector<float> qs, s, kt, v, m, l, acc, total;
    qs.resize(static_cast<size_t>(nr) * hd);
    s.resize(static_cast<size_t>(nr) * kTileKeys);
    kt.resize(static_cast<size_t>(hd) * kTileKeys);
    v.resize(static_cast<size_t>(kTileKeys) * hd);
    m.resize(nr);  // this partition's state per row: m, l, acc[hd]
    l.resize(nr);
    acc.resize(static_cast<size_t>(nr) * hd);
    total.resize(static_cast<size_t>(nr) * (2 + hd));  // the fold so far per row: m, l, acc[hd]
    auto total_of = [&](int r) { return total.data() + static_cast<size_t>(r) * (2 + hd); };

    for (int i = 0; i < it.num_tokens; ++i)
      for (int g = 0; g < group; ++g) {
        const float* src = q + (static_cast<size_t>(it.t0 + i) * shape.num_heads + it.kv_head * group + g) * hd;
        float* dst = qs.data() + static_cast<size_t>(i * group + g) * hd;
        for (int d = 0; d < hd; ++d) dst[d] = src[d] * scale;
      }

    // Row pointers of keys [k0, k0 + n) through the block table.
    const int64_t row_bytes = kv.row_bytes();
    auto gather = [&](int k0, int n, const uint8_t** key_rows, const uint8_t** value_rows) {
      int b = k0 / block_size, off = k0 % block_size;
      for (int j = 0; j < n; ++j) {
        const size_t at = static_cast<size_t>(off) * row_bytes;
        key_rows[j] = kv.key_block(layer, table[b], it.kv_head) + at;
        value_rows[j] = kv.value_block(layer, table[b], it.kv_head) + at;
        if (++off == block_size) off = 0, ++b;
      }
    };
    // A decode step reads its keys from memory, and a tile's loads come in one burst after the
    // previous tile's arithmetic: ask for the rows a few tiles ahead.
    auto prefetch = [&](int k0, int n) {
      const uint8_t* ahead_keys[kTileKeys];
      const uint8_t* ahead_values[kTileKeys];
      gather(k0, n, ahead_keys, ahead_values);
      for (int j = 0; j < n; ++j)
        for (int64_t x = 0; x < row_bytes; x += 64) {
          __builtin_prefetch(ahead_keys[j] + x);
          __builtin_prefetch(ahead_values[j] + x);
        }
    };
    const uint8_t* key_rows[kTileKeys];
    const uint8_t* value_rows[kTileKeys];
    for (int p = task.part_begin; p < task.part_end; ++p) {
      const int key_begin = p * kPartitionKeys, key_end = std::min(it.ctx, key_begin + kPartitionKeys);
      std::fill(m.begin(), m.end(), -INFINITY);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(acc.begin(), acc.end(), 0.0f);
      // Tiles stay where they are without a window (at multiples of kTileKeys from the
      // partition's start); the ones wholly before the window are skipped.
      const int first_tile = key_begin + std::max(0, it.key_lo - key_begin) / kTileKeys * kTileKeys;
      for (int k0 = first_tile; k0 < key_end; k0 += kTileKeys) {
        const int n = std::min(kTileKeys, key_end - k0);
        if (k0 + kPrefetchKeys < key_end) prefetch(k0 + kPrefetchKeys, std::min(kTileKeys, key_end - k0 - kPrefetchKeys));
        gather(k0, n, key_rows, value_rows);
        kernel.load_tile(kv.type(), key_rows, value_rows, n, hd, kt.data(), v.data());
        // The tile's first token that sees key k0: tokens are in position order.
        int first = 0;
        while (first < it.num_tokens && ctx_of(it.t0 + first) <= k0) ++first;
        if (first == it.num_tokens) continue;
        kernel.scores(qs.data() + static_cast<size_t>(first) * group * hd, (it.num_tokens - first) * group, hd,
                      kt.data(), s.data() + static_cast<size_t>(first) * group * kTileKeys);
        for (int i = first; i < it.num_tokens; ++i) {
          const int valid = std::min(n, ctx_of(it.t0 + i) - k0);
          const int before = lo_of(it.t0 + i) - k0;  // keys of the tile before its window
          if (valid <= 0 || before >= valid) continue;
          const int r = i * group;  // the token's query heads, rows r .. r + group - 1
          for (int j = 0; j < before; ++j)
            for (int g = 0; g < group; ++g) s[static_cast<size_t>(r + g) * kTileKeys + j] = kMaskedScore;
          kernel.accumulate(s.data() + static_cast<size_t>(r) * kTileKeys, group, valid, v.data(), hd, m.data() + r,
                            l.data() + r, acc.data() + static_cast<size_t>(r) * hd);
        }
      }
      // Partition p is done for the rows that see some of it.
      for (int i = 0; i < it.num_tokens; ++i) {
        if (!sees(it.t0 + i, p)) continue;
        for (int g = 0; g < group; ++g) {
          const int r = i * group + g;
          const float* racc = acc.data() + static_cast<size_t>(r) * hd;
          if (it.splits == 1) {
            float* tt = total_of(r);
            fold(tt[0], tt[1], tt + 2, m[r], l[r], racc, hd, p == first_part(it.t0 + i));
          } else {
            float* st = partial(it, p, r);
            st[0] = m[r];
            st[1] = l[r];
            std::copy_n(racc, hd, st + 2);
          }
        }
      }
    }
    if (it.splits == 1)
      for (int r = 0; r < nr; ++r) finish(it, r, total_of(r));
  }

  float* partial(const Item& it, int p, int r) const {
    return store.data() + it.partials + (static_cast<size_t>(p) * rows(it) + r) * (2 + shape.head_dim);
  }

  // Split items: each row's partitions folded in order, as an unsplit task does.
  void merge(const Item& it) const {
    const int hd = shape.head_dim;
    thread_local std::vector<float> total;
    total.resize(2 + hd);
    for (int i = 0; i < it.num_tokens; ++i)
      for (int g = 0; g < group; ++g) {
        const int r = i * group + g;
        const int parts = parts_of(ctx_of(it.t0 + i)), first = first_part(it.t0 + i);
        for (int p = first; p < parts; ++p) {
          const float* st = partial(it, p, r);
          fold(total[0], total[1], total.data() + 2, st[0], st[1], st + 2, hd, p == first);
        }
        finish(it, r, total.data());
      }
  }

  void finish(const Item& it, int r, const float* st) const {
    const int hd = shape.head_dim, i = r / group, g = r % group;
    const int head = it.kv_head * group + g;
    float* o = out + (static_cast<size_t>(it.t0 + i) * shape.num_heads + head) * hd;
    if (shape.sinks) {
      // The sink's logit folded into the state as a key with no value: the sum gains
      // exp(sink - m) at the larger of the two maxima.
      const float sink = shape.sinks[head], m = std::max(st[0], sink);
      const float a = std::exp(st[0] - m);
      const float inv = 1.0f / std::fma(st[1], a, std::exp(sink - m));
      for (int d = 0; d < hd; ++d) o[d] = st[2 + d] * a * inv;
      return;
    }
    const float inv = 1.0f / st[1];
    for (int d = 0; d < hd; ++d) o[d] = st[2 + d] * inv;
  }
};

}  // namespace

void paged_attention(const ForwardBatch& batch, const KvPool& kv, int layer, const AttentionShape& shape,
                     const float* q, float* out, ThreadPool& pool, const AttentionKernel& kernel) {
  thread_local std::vector<float> store;
  Planner planner{batch, kv, layer, shape, q, out, kernel, store, shape.num_heads / shape.num_kv_heads,
                  shape.scale > 0.0f ? shape.scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim)), {}, {}};
  planner.plan(pool.num_threads());
  pool.parallel_for(static_cast<int64_t>(planner.tasks.size()), [&](int64_t t) { planner.run(planner.tasks[t]); });
  std::vector<int> split;
  for (int i = 0; i < static_cast<int>(planner.items.size()); ++i)
    if (planner.items[i].splits > 1) split.push_back(i);
  if (!split.empty())
    pool.parallel_for(static_cast<int64_t>(split.size()), [&](int64_t i) { planner.merge(planner.items[split[i]]); });
}

}  // namespace pagedchat::cpu
