// Cutting the KV manager's ordered transfer list into batches that may each run as one
// parallel launch: a batch holds one kind and never reads or writes a block it also writes.

#include <QtTest>

#include "engine/kv/kv_transfers.h"

using namespace pagedchat;

namespace {
// Batch sizes, with the kind of each batch.
std::vector<std::pair<TransferKind, size_t>> shape(const std::vector<BlockTransfer>& list) {
  std::vector<std::pair<TransferKind, size_t>> out;
  for (const TransferBatch& b : batch_transfers(list)) out.push_back({b.kind, b.pairs.size()});
  return out;
}
constexpr TransferKind kCopy = TransferKind::copy, kOut = TransferKind::swap_out, kIn = TransferKind::swap_in;
using Shape = std::vector<std::pair<TransferKind, size_t>>;
}  // namespace

class TestKvTransfers : public QObject {
  Q_OBJECT
 private slots:
  void independentCopiesShareABatch() {
    QVERIFY(batch_transfers({}).empty());
    std::vector<BlockTransfer> list = {{kCopy, 1, 2}, {kCopy, 3, 4}, {kCopy, 1, 5}};
    std::vector<TransferBatch> batches = batch_transfers(list);
    QCOMPARE(batches.size(), size_t(1));
    QCOMPARE(batches[0].pairs.size(), size_t(3));
    QCOMPARE(batches[0].pairs[2].src, 1);
    QCOMPARE(batches[0].pairs[2].dst, 5);
  }

  void aBlockWrittenThenReadOrWrittenStartsANewBatch() {
    QCOMPARE(shape({{kCopy, 1, 2}, {kCopy, 2, 5}}), (Shape{{kCopy, 1}, {kCopy, 1}}));  // read after write
    QCOMPARE(shape({{kCopy, 1, 2}, {kCopy, 3, 1}}), (Shape{{kCopy, 1}, {kCopy, 1}}));  // write after read
    QCOMPARE(shape({{kOut, 1, 0}, {kOut, 2, 0}}), (Shape{{kOut, 1}, {kOut, 1}}));      // write after write
  }

  void deviceAndHostIdsAreDifferentBlocks() {
    // Host block 0 written, then device block 0 read: no hazard.
    QCOMPARE(shape({{kOut, 3, 0}, {kOut, 0, 1}}), (Shape{{kOut, 2}}));
    QCOMPARE(shape({{kIn, 0, 5}, {kIn, 5, 6}}), (Shape{{kIn, 2}}));
  }

  void kindsKeepTheirOrder() {
    QCOMPARE(shape({{kOut, 1, 0}, {kOut, 2, 1}, {kCopy, 4, 1}, {kIn, 0, 2}, {kOut, 3, 2}}),
             (Shape{{kOut, 2}, {kCopy, 1}, {kIn, 1}, {kOut, 1}}));
  }
};

QTEST_APPLESS_MAIN(TestKvTransfers)
#include "test_kv_transfers.moc"
