// The CUDA backend's host-side batch plan (kernels/common/batch_plan.h): context lengths, grid bounds,
// the decode-only test that picks the split-K decode kernel, and the packed metadata buffer
// (every array 16-byte aligned, each holding exactly the batch's values).

#include <QtTest>

#include <cstring>

#include "kernels/common/batch_plan.h"

using namespace pagedchat;
using namespace pagedchat::kernels;

namespace {

template <typename T>
std::vector<T> read(const BatchPlan& p, int64_t offset, size_t n) {
  std::vector<T> out(n);
  std::memcpy(out.data(), p.packed.data() + offset, n * sizeof(T));
  return out;
}

}  // namespace

class TestBatchPlan : public QObject {
  Q_OBJECT

 private slots:
  void mixedBatch() {
    ForwardBatch b;
    const int32_t prompt[5] = {10, 11, 12, 13, 14};
    b.add_sequence(prompt, 5, 0, {7, 3}, 4, true);   // a prompt: positions 0..4
    b.add_sequence(prompt, 1, 9, {1, 2, 5}, 4, true);  // a decode step at position 9
    b.add_sequence(prompt, 2, 2, {6}, 4, false);       // a chunk, no logits
    const BatchPlan p = plan_batch(b);
    QCOMPARE(p.num_tokens, 8);
    QCOMPARE(p.num_seqs, 3);
    QCOMPARE(p.num_logits, 2);
    QCOMPARE(p.seq_lens, (std::vector<int32_t>{5, 10, 4}));
    QCOMPARE(p.max_q_len, 5);
    QCOMPARE(p.max_seq_len, 10);
    QCOMPARE(p.block_table_stride, 3);
    QVERIFY(!p.decode_only);
    for (int64_t off : {p.token_ids, p.positions, p.slot_mapping, p.cu_seqlens_q, p.seq_lens_at, p.block_tables, p.logits_indices})
      QCOMPARE(off % 4, int64_t(0));
    QCOMPARE(read<int32_t>(p, p.token_ids, 8), b.token_ids);
    QCOMPARE(read<int32_t>(p, p.positions, 8), b.positions);
    QCOMPARE(read<int64_t>(p, p.slot_mapping, 8), b.slot_mapping);
    QCOMPARE(read<int32_t>(p, p.cu_seqlens_q, 4), (std::vector<int32_t>{0, 5, 6, 8}));
    QCOMPARE(read<int32_t>(p, p.seq_lens_at, 3), p.seq_lens);
    QCOMPARE(read<int32_t>(p, p.block_tables, 9), (std::vector<int32_t>{7, 3, -1, 1, 2, 5, 6, -1, -1}));
    QCOMPARE(read<int32_t>(p, p.logits_indices, 2), (std::vector<int32_t>{4, 5}));
    QCOMPARE(p.total, p.logits_indices + 4);
  }

  void decodeOnly() {
    ForwardBatch b;
    const int32_t t[1] = {42};
    for (int s = 0; s < 3; ++s) b.add_sequence(t, 1, 16 * s, std::vector<int32_t>(s + 1, s), 16, true);
    const BatchPlan p = plan_batch(b);
    QVERIFY(p.decode_only);
    QCOMPARE(p.max_q_len, 1);
    QCOMPARE(p.seq_lens, (std::vector<int32_t>{1, 17, 33}));
    QCOMPARE(p.max_seq_len, 33);
  }
};

QTEST_APPLESS_MAIN(TestBatchPlan)
#include "test_batch_plan.moc"
