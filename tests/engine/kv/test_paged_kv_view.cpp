// The paged KV view's index math (kernels/common/paged_kv_view.h), shared by the CUDA kernels and
// their CPU references: on random, non-contiguous block tables, every token of every sequence
// lands in its own place, the slot-mapping path and the block-table path agree, HND and NHD
// match their written-out formulas, and an HND view reads the CPU backend's (f32) pool.

#include <QtTest>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "engine/backend/cpu/kv_pool.h"
#include "kernels/common/paged_kv_view.h"

using namespace pagedchat;
using namespace pagedchat::kernels;

namespace {

struct Tables {
  std::vector<int32_t> table;  // [num_seqs, stride], -1 past each sequence's blocks
  std::vector<int32_t> lens;   // [num_seqs] tokens
  int32_t stride = 0;
};

// Sequences of random lengths whose blocks are a random permutation of the pool.
Tables random_tables(std::mt19937& rng, int num_seqs, int block_size, int num_blocks) {
  std::vector<int32_t> free(num_blocks);
  std::iota(free.begin(), free.end(), 0);
  std::shuffle(free.begin(), free.end(), rng);
  Tables t;
  int budget = num_blocks;
  std::vector<int> nblocks;
  for (int s = 0; s < num_seqs; ++s) {
    const int n = std::min(budget, 1 + static_cast<int>(rng() % 6));
    budget -= n;
    nblocks.push_back(n);
    t.lens.push_back(n == 0 ? 0 : (n - 1) * block_size + 1 + static_cast<int>(rng() % block_size));
    t.stride = std::max(t.stride, n);
  }
  t.table.assign(static_cast<size_t>(num_seqs) * t.stride, -1);
  size_t next = 0;
  for (int s = 0; s < num_seqs; ++s)
    for (int i = 0; i < nblocks[s]; ++i) t.table[static_cast<size_t>(s) * t.stride + i] = free[next++];
  return t;
}

// A value that names (seq, pos, head, d) uniquely.
float naive_value(int seq, int pos, int head, int d) { return static_cast<float>(((seq * 1000 + pos) * 16 + head) * 256 + d); }

void check_layout(PagedKvView<float> view, bool hnd) {
  std::mt19937 rng(hnd ? 7 : 8);
  for (int round = 0; round < 20; ++round) {
    const int num_seqs = 1 + static_cast<int>(rng() % 5);
    Tables t = random_tables(rng, num_seqs, view.block_size, view.num_blocks);
    std::vector<float> k(static_cast<size_t>(view.pool_elements()), -1.0f);
    std::vector<int> writes(k.size(), 0);
    view.k = k.data();
    view.block_tables = t.table.data();
    view.block_table_stride = t.stride;
    size_t expected_writes = 0;
    for (int s = 0; s < num_seqs; ++s)
      for (int pos = 0; pos < t.lens[s]; ++pos)
        for (int h = 0; h < view.num_kv_heads; ++h) {
          const int32_t b = t.table[static_cast<size_t>(s) * t.stride + pos / view.block_size];
          const int64_t slot = static_cast<int64_t>(b) * view.block_size + pos % view.block_size;
          QCOMPARE(view.slot_offset(slot, h), view.token_offset(s, pos, h));
          const int64_t sib = pos % view.block_size;
          const int64_t written_out = hnd ? ((b * view.num_kv_heads + h) * view.block_size + sib) * view.head_dim
                                          : ((b * view.block_size + sib) * view.num_kv_heads + h) * view.head_dim;
          QCOMPARE(view.token_offset(s, pos, h), written_out);
          for (int d = 0; d < view.head_dim; ++d) {
            view.key(s, pos, h)[d] = naive_value(s, pos, h, d);
            ++writes[static_cast<size_t>(view.key(s, pos, h) + d - k.data())];
            ++expected_writes;
          }
        }
    // No two (seq, pos, head, d) share an element, and all stay inside the pool.
    QCOMPARE(static_cast<size_t>(std::count(writes.begin(), writes.end(), 1)), expected_writes);
    QCOMPARE(std::count_if(writes.begin(), writes.end(), [](int w) { return w > 1; }), 0l);
    for (int s = 0; s < num_seqs; ++s)
      for (int pos = 0; pos < t.lens[s]; ++pos)
        for (int h = 0; h < view.num_kv_heads; ++h)
          for (int d = 0; d < view.head_dim; ++d) QCOMPARE(view.key(s, pos, h)[d], naive_value(s, pos, h, d));
  }
}

}  // namespace

class TestPagedKvView : public QObject {
  Q_OBJECT
 private slots:
  void hndTokensLandApartAndReadBack() {
    for (int bs : {1, 4, 8, 16, 32}) check_layout(hnd_view<float>(40, 3, bs, 8), true);
  }

  void nhdTokensLandApartAndReadBack() {
    for (int bs : {1, 4, 8, 16, 32}) check_layout(nhd_view<float>(40, 3, bs, 8), false);
  }

  // A page of one kv head is contiguous in HND, the reason the CUDA pool uses it.
  void hndPageOfOneHeadIsContiguous() {
    PagedKvView<float> v = hnd_view<float>(10, 4, 16, 64);
    for (int slot = 0; slot < 16; ++slot) QCOMPARE(v.offset(7, 2, slot), v.offset(7, 2, 0) + slot * 64);
    QCOMPARE(v.offset(7, 3, 0) - v.offset(7, 2, 0), int64_t(16 * 64));
  }

  // Offsets past 2^31 elements do not wrap (a large pool at head_dim 128).
  void offsetsAre64Bit() {
    PagedKvView<uint16_t> v = hnd_view<uint16_t>(300000, 8, 16, 128);
    QCOMPARE(v.offset(299999, 7, 15), ((int64_t(299999) * 8 + 7) * 16 + 15) * 128);
    QVERIFY(v.pool_elements() > (int64_t(1) << 31));
  }

  // An HND f32 view over the CPU backend's pool points where KvPool::key does.
  void hndViewReadsTheCpuPool() {
    KvCacheShape shape;
    shape.num_layers = 2;
    shape.num_kv_heads = 3;
    shape.head_dim = 8;
    shape.num_blocks = 6;
    shape.block_size = 4;
    cpu::KvPool pool;
    pool.allocate(shape);
    for (int layer = 0; layer < 2; ++layer) {
      PagedKvView<float> v = hnd_view<float>(6, 3, 4, 8);
      v.k = pool.key(layer, 0, 0);
      v.v = pool.value(layer, 0, 0);
      for (int64_t slot = 0; slot < 24; ++slot)
        for (int h = 0; h < 3; ++h) {
          QCOMPARE(v.k + v.slot_offset(slot, h), pool.key(layer, slot, h));
          QCOMPARE(v.v + v.slot_offset(slot, h), pool.value(layer, slot, h));
        }
    }
  }
};

QTEST_APPLESS_MAIN(TestPagedKvView)
#include "test_paged_kv_view.moc"
