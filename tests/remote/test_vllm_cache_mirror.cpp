// What vLLM's KV events say its cache holds (remote/vllm_cache_mirror.h): a slot per stored
// block, freed by its removal and reused lowest first; a chain per prompt, followed through the
// parent hashes; other media in the host slots; AllBlocksCleared empties every tier. Invariants
// over random event streams, against a plain set of what should be held.

#include <QtTest>

#include <map>
#include <random>
#include <set>

#include "remote/vllm_cache_mirror.h"

using namespace pagedchat::remote;

namespace {
VllmBlockHash hashOf(int n) { return "i" + std::string(7, '\0') + static_cast<char>(n); }

VllmKvEvent stored(std::vector<int> hashes, std::optional<int> parent, const std::string& medium = {}, int blockSize = 4) {
  VllmKvEvent e;
  e.kind = VllmKvEventKind::block_stored;
  for (int h : hashes) e.block_hashes.push_back(hashOf(h));
  if (parent) e.parent_block_hash = hashOf(*parent);
  for (size_t t = 0; t < hashes.size() * static_cast<size_t>(blockSize); ++t) e.token_ids.push_back(static_cast<int64_t>(100 + t));
  e.block_size = blockSize;
  e.medium = medium;
  return e;
}
VllmKvEvent removed(std::vector<int> hashes, const std::string& medium = {}) {
  VllmKvEvent e;
  e.kind = VllmKvEventKind::block_removed;
  for (int h : hashes) e.block_hashes.push_back(hashOf(h));
  e.medium = medium;
  return e;
}
VllmKvBatch batch(std::vector<VllmKvEvent> events) {
  VllmKvBatch b;
  b.events = std::move(events);
  return b;
}
std::set<VllmBlockHash> heldHashes(const std::vector<std::optional<VllmMirrorBlock>>& held) {
  std::set<VllmBlockHash> out;
  for (const auto& b : held)
    if (b) out.insert(b->hash);
  return out;
}
}  // namespace

class TestVllmCacheMirror : public QObject {
  Q_OBJECT
 private slots:
  void storesTakeSlotsAndChainsFollowParents() {
    VllmCacheMirror m;
    const auto changes = m.apply(batch({stored({1, 2, 3}, std::nullopt), stored({4, 5}, 3), stored({6}, std::nullopt)}));
    QCOMPARE(changes.size(), size_t{6});
    QCOMPARE(m.device_slots().size(), size_t{6});
    QCOMPARE(m.num_chains(), 2);
    for (int slot = 0; slot < 5; ++slot) QCOMPARE(m.device_slots()[slot]->chain, 1);  // a later turn continues its prompt's chain
    QCOMPARE(m.device_slots()[5]->chain, 2);
    QCOMPARE(m.device_slots()[3]->parent, std::optional<VllmBlockHash>(hashOf(3)));
    QCOMPARE(m.device_slots()[4]->parent, std::optional<VllmBlockHash>(hashOf(4)));
    QCOMPARE(m.device_slots()[1]->tokens, (std::vector<int64_t>{104, 105, 106, 107}));  // its own block_size tokens
    QCOMPARE(m.block_size(), 4);
  }

  void aRemovalFreesItsSlotForTheNextStore() {
    VllmCacheMirror m;
    m.apply(batch({stored({1, 2, 3}, std::nullopt)}));
    const auto gone = m.apply(batch({removed({2})}));
    QCOMPARE(gone.size(), size_t{1});
    QCOMPARE(gone[0].kind, VllmMirrorChange::Kind::removed);
    QCOMPARE(gone[0].slot, 1);
    QVERIFY(!m.device_slots()[1]);
    const auto back = m.apply(batch({stored({7}, std::nullopt)}));
    QCOMPARE(back[0].slot, 1);  // the lowest free slot
    QCOMPARE(m.device_slots().size(), size_t{3});
    // A removal of what we never saw stored (before the watch) changes nothing and is counted.
    QVERIFY(m.apply(batch({removed({99})})).empty());
    QCOMPARE(m.num_unknown_removed(), int64_t{1});
    // A store of a hash held already is kept once.
    QVERIFY(m.apply(batch({stored({7}, std::nullopt)})).empty());
    QCOMPARE(m.num_restored(), int64_t{1});
  }

  void otherMediaAreHostSlotsAndClearingEmptiesAll() {
    VllmCacheMirror m;
    m.apply(batch({stored({1, 2}, std::nullopt), stored({1}, std::nullopt, "CPU")}));
    QCOMPARE(heldHashes(m.device_slots()).size(), size_t{2});
    QCOMPARE(heldHashes(m.host_slots()), std::set<VllmBlockHash>({hashOf(1)}));
    QCOMPARE(m.host_slots()[0]->chain, m.device_slots()[0]->chain);  // offloaded, the same prompt's block
    m.apply(batch({removed({1})}));  // from the GPU only: the CPU copy stays
    QCOMPARE(heldHashes(m.host_slots()).size(), size_t{1});
    VllmKvEvent clear;
    clear.kind = VllmKvEventKind::all_blocks_cleared;
    const auto changes = m.apply(batch({clear}));
    QCOMPARE(changes.size(), size_t{2});  // block 2 on the GPU, block 1 on the CPU
    QVERIFY(heldHashes(m.device_slots()).empty() && heldHashes(m.host_slots()).empty());
    m.apply(batch({stored({5}, 2)}));  // its parent went with the clear: a chain of its own
    QCOMPARE(m.device_slots()[0]->chain, 2);
  }

  // Random streams: what is held is exactly what was stored and not removed since, each in one
  // slot; every slot change is reported; the slots never outgrow the most ever held at once.
  void randomStreamsKeepExactlyWhatIsStored() {
    std::mt19937 rng(20261204);
    for (int round = 0; round < 50; ++round) {
      VllmCacheMirror m;
      std::set<VllmBlockHash> expected;
      size_t mostHeld = 0;
      for (int step = 0; step < 200; ++step) {
        VllmKvBatch b;
        const int kind = static_cast<int>(rng() % 10);
        std::vector<int> hashes;
        for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) hashes.push_back(static_cast<int>(rng() % 64));
        if (kind < 6) {
          b.events.push_back(stored(hashes, rng() % 2 ? std::optional<int>(static_cast<int>(rng() % 64)) : std::nullopt));
          for (int h : hashes) expected.insert(hashOf(h));
        } else if (kind < 9) {
          b.events.push_back(removed(hashes));
          for (int h : hashes) expected.erase(hashOf(h));
        } else {
          b.events.emplace_back().kind = VllmKvEventKind::all_blocks_cleared;
          expected.clear();
        }
        std::set<int32_t> before, after;
        for (size_t s = 0; s < m.device_slots().size(); ++s)
          if (m.device_slots()[s]) before.insert(static_cast<int32_t>(s));
        const auto changes = m.apply(b);
        for (size_t s = 0; s < m.device_slots().size(); ++s)
          if (m.device_slots()[s]) after.insert(static_cast<int32_t>(s));
        QCOMPARE(heldHashes(m.device_slots()), expected);
        QCOMPARE(after.size(), expected.size());  // one slot each
        mostHeld = std::max(mostHeld, expected.size());
        QVERIFY(m.device_slots().size() <= mostHeld);
        std::set<int32_t> changed;
        for (const VllmMirrorChange& c : changes) changed.insert(c.slot);
        for (int32_t s : before) QVERIFY(after.count(s) || changed.count(s));
        for (int32_t s : after) QVERIFY(before.count(s) || changed.count(s));
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestVllmCacheMirror)
#include "test_vllm_cache_mirror.moc"
