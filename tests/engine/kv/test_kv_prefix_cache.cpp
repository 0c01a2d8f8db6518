// The prefix cache of the KV manager: which blocks of a new prompt hit, that the last prompt
// token is always computed, and that a hash collision never serves another prefix's KV, even
// one at an inner block of the chain.

#include <QtTest>

#include <algorithm>
#include <numeric>

#include "engine/engine/request.h"
#include "engine/kv/kv_manager.h"

using namespace pagedchat;

namespace {
std::vector<int32_t> iota_tokens(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<int32_t> concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int32_t> table_of(const KvManager& kv, SequenceId seq) {
  std::span<const int32_t> t = kv.block_table(seq);
  return {t.begin(), t.end()};
}

// Starts seq on prompt through the prefix cache and appends the rest; returns the hit.
PrefixHit run_prompt(KvManager& kv, SequenceId seq, const std::vector<int32_t>& prompt, uint64_t salt = 0) {
  PrefixHit hit = kv.find_prefix(prompt, salt);
  kv.start(seq, hit);
  std::vector<int64_t> slot_mapping;
  kv.append(seq, std::span(prompt).subspan(hit.num_tokens), slot_mapping);
  return hit;
}
}  // namespace

class TestKvPrefixCache : public QObject {
  Q_OBJECT
 private slots:
  void hashCoversParentTokensOrderAndLength() {
    std::vector<int32_t> a = {1, 2, 3, 4}, b = {2, 1, 3, 4}, c = {1, 2, 3};
    uint64_t root = root_block_hash(7);
    QCOMPARE(hash_block_tokens(root, a), hash_block_tokens(root, a));
    QVERIFY(hash_block_tokens(root, a) != hash_block_tokens(root, b));
    QVERIFY(hash_block_tokens(root, a) != hash_block_tokens(root, c));
    QVERIFY(hash_block_tokens(root, a) != hash_block_tokens(root_block_hash(8), a));
    QVERIFY(hash_block_tokens(root, a) != hash_block_tokens(hash_block_tokens(root, a), a));
  }

  void aCacheSaltSharesOnlyWithTheSameSalt() {
    KvManager kv({.num_blocks = 32, .block_size = 4});
    const std::vector<int32_t> secret = iota_tokens(1, 13);  // 3 full blocks and one token
    run_prompt(kv, 1, secret, cache_salt_of("alice"));
    QCOMPARE(kv.check_invariants(), std::string());
    // Another salt, and no salt: nothing hits, so the cache says nothing of what alice sent.
    QCOMPARE(kv.find_prefix(secret, cache_salt_of("bob")).num_tokens, 0);
    QCOMPARE(kv.find_prefix(secret).num_tokens, 0);
    // The same salt: every full block but the last token's.
    QCOMPARE(kv.find_prefix(secret, cache_salt_of("alice")).num_tokens, 12);
    // Released to the cache, still only alice's.
    kv.free(1);
    QCOMPARE(kv.find_prefix(secret, cache_salt_of("bob")).num_tokens, 0);
    PrefixHit again = run_prompt(kv, 2, secret, cache_salt_of("alice"));
    QCOMPARE(again.num_tokens, 12);
    // Unsalted sequences share among themselves as before, apart from alice's.
    run_prompt(kv, 3, secret);
    QCOMPARE(kv.find_prefix(secret).num_tokens, 12);
    QVERIFY(table_of(kv, 3)[0] != table_of(kv, 2)[0]);
    // A fork keeps its parent's salt: its full blocks chain from alice's root.
    kv.fork(2, 4);
    QCOMPARE(kv.check_invariants(), std::string());
    QCOMPARE(cache_salt_of("alice"), cache_salt_of("alice"));
    QVERIFY(cache_salt_of("") != 0);
  }

  void reusesEveryFullBlockThatHits() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    std::vector<int32_t> a = iota_tokens(1, 10);  // blocks [1..4] [5..8] [9 10]
    PrefixHit first = run_prompt(kv, 1, a);
    QCOMPARE(first.num_tokens, 0);
    QCOMPARE(kv.block_table(1).size(), size_t(3));

    // Same two full blocks, then other tokens: both full blocks hit, shared with seq 1.
    PrefixHit hit = kv.find_prefix(concat({iota_tokens(1, 8), {99, 98, 97}}));
    QCOMPARE(hit.num_tokens, 8);
    QCOMPARE(hit.blocks, (std::vector<int32_t>{kv.block_table(1)[0], kv.block_table(1)[1]}));
    QCOMPARE(hit.num_revived, 0);
    QCOMPARE(kv.num_blocks_to_start(hit, 3), 1);
    kv.start(2, hit);
    std::vector<int64_t> slot_mapping;
    kv.append(2, std::vector<int32_t>{99, 98, 97}, slot_mapping);
    QCOMPARE(kv.snapshot().blocks[hit.blocks[0]].ref_count, 2);
    QCOMPARE(kv.stored_tokens(2), concat({iota_tokens(1, 8), {99, 98, 97}}));

    // Only the first block matches; the walk stops at the first miss.
    PrefixHit third = run_prompt(kv, 3, concat({iota_tokens(1, 4), {50, 51, 52, 53}, iota_tokens(9, 4), {60}}));
    QCOMPARE(third.num_tokens, 4);

    KvStats st = kv.stats();
    QCOMPARE(st.prefix_lookup_tokens, int64_t(10 + 11 + 13));
    QCOMPARE(st.prefix_hit_tokens, int64_t(8 + 4));
    QCOMPARE(st.prefix_hit_rate(), 12.0 / 34.0);
    QVERIFY(kv.check_invariants().empty());
  }

  void revivesCachedBlocksOfAFreedSequence() {
    KvManager kv({.num_blocks = 8, .block_size = 4});
    run_prompt(kv, 1, iota_tokens(1, 9));
    kv.free(1);
    QCOMPARE(kv.num_cached_blocks(), 2);  // the partial third block was freed
    QCOMPARE(kv.num_free_blocks(), 6);
    PrefixHit hit = kv.find_prefix(iota_tokens(1, 12));
    QCOMPARE(hit.num_tokens, 8);
    QCOMPARE(hit.num_revived, 2);
    QCOMPARE(kv.num_blocks_to_start(hit, 4), 3);  // two revived + one new
    kv.start(2, hit);
    QCOMPARE(kv.num_cached_blocks(), 0);
    QCOMPARE(kv.num_used_blocks(), 2);
    QVERIFY(kv.check_invariants().empty());
  }

  void fullPromptHitRecomputesTheLastBlock() {
    KvManager kv({.num_blocks = 16, .block_size = 4});
    std::vector<int32_t> prompt = iota_tokens(1, 8);  // exactly two blocks
    run_prompt(kv, 1, prompt);
    // The same prompt again: the last token must be computed, so the last block is not taken.
    PrefixHit hit = kv.find_prefix(prompt);
    QCOMPARE(hit.num_tokens, 4);
    QCOMPARE(hit.blocks.size(), size_t(1));
    kv.start(2, hit);
    std::vector<int64_t> slot_mapping;
    kv.append(2, std::span(prompt).subspan(4), slot_mapping);
    QCOMPARE(slot_mapping.size(), size_t(4));  // the whole last block recomputed
    int32_t dup = kv.block_table(2)[1];
    QVERIFY(dup != kv.block_table(1)[1]);
    KvSnapshot snap = kv.snapshot();
    QVERIFY(snap.blocks[dup].has_hash);
    QVERIFY(!snap.blocks[dup].in_prefix_cache);  // the first copy keeps the index entry

    // The duplicate has the same content, so a block after it is still found after the first copy.
    kv.append(2, std::vector<int32_t>{40, 41, 42, 43}, slot_mapping);
    int32_t after_dup = kv.block_table(2)[2];
    PrefixHit longer = kv.find_prefix(concat({prompt, {40, 41, 42, 43, 44}}));
    QCOMPARE(longer.blocks, (std::vector<int32_t>{kv.block_table(1)[0], kv.block_table(1)[1], after_dup}));
    // A prompt one token longer than the cached blocks takes them all.
    QCOMPARE(kv.find_prefix(concat({prompt, {9}})).num_tokens, 8);
    QVERIFY(kv.check_invariants().empty());
  }

  void aCollidingBlockIsNotServed() {
    // Every block hashes alike: each lookup finds the one indexed block, whose tokens differ.
    KvManager kv({.num_blocks = 16, .block_size = 4, .hash_fn = [](uint64_t, std::span<const int32_t>) { return uint64_t(42); }});
    run_prompt(kv, 1, iota_tokens(1, 9));
    PrefixHit hit = kv.find_prefix(concat({iota_tokens(5, 8), {1}}));
    QCOMPARE(hit.num_tokens, 0);
    QCOMPARE(hit.stop, MatchKind::collision);
    run_prompt(kv, 2, concat({iota_tokens(5, 8), {1}}));
    QCOMPARE(kv.stored_tokens(2), concat({iota_tokens(5, 8), {1}}));
    // Identical content still hits: the check is on content, not on the hash alone.
    QCOMPARE(kv.find_prefix(iota_tokens(1, 9)).num_tokens, 4);
    QVERIFY(kv.stats().num_hash_collisions >= 1);
    QVERIFY(kv.check_invariants().empty());
  }

  void aCollisionAtAnInnerBlockIsNotServed() {
    // Blocks X and Y hash alike at the root. A block Z computed after Y must not be served
    // after X, though its own tokens, its parent's hash and X's tokens all match: its parent
    // content id (Y's) is not X's.
    std::vector<int32_t> x = {1, 2, 3, 4}, y = {5, 6, 7, 8}, z = {9, 10, 11, 12};
    auto hash = [x, y](uint64_t parent, std::span<const int32_t> t) {
      bool is_y = std::equal(t.begin(), t.end(), y.begin(), y.end());
      return hash_block_tokens(parent, is_y ? std::span<const int32_t>(x) : t);
    };
    KvManager kv({.num_blocks = 16, .block_size = 4, .num_host_blocks = 4, .hash_fn = hash});
    run_prompt(kv, 1, concat({y, z, {100}}));  // Y, then Z after it: both indexed
    kv.swap_out(1);
    QCOMPARE(kv.evict_cached(16), 2);       // no Y or Z left on the device
    run_prompt(kv, 2, concat({x, {101}}));  // X is indexed under the hash Y had
    kv.swap_in(1);                          // Y comes back as a spare, Z indexed again
    KvSnapshot snap = kv.snapshot();
    QVERIFY(!snap.blocks[kv.block_table(1)[0]].in_prefix_cache);
    QVERIFY(snap.blocks[kv.block_table(1)[1]].in_prefix_cache);

    PrefixHit hit = kv.find_prefix(concat({x, z, {102}}));
    QCOMPARE(hit.blocks, (std::vector<int32_t>{kv.block_table(2)[0]}));
    QCOMPARE(hit.stop, MatchKind::lineage);
    // Y then Z: Y's index entry now holds X, whose tokens differ.
    QCOMPARE(kv.find_prefix(concat({y, z, {102}})).stop, MatchKind::collision);
    QVERIFY(kv.check_invariants().empty());
  }

  void aSpareCopyTakesOverTheIndexEntry() {
    // The same prompt twice: the second copy of its last block is a spare. When the first
    // copy is evicted, the spare takes the index entry, and what follows it stays reachable.
    KvManager kv({.num_blocks = 8, .block_size = 4});
    std::vector<int32_t> prompt = iota_tokens(1, 8);
    run_prompt(kv, 1, prompt);
    run_prompt(kv, 2, prompt);
    int32_t spare = kv.block_table(2)[1];
    QVERIFY(!kv.snapshot().blocks[spare].in_prefix_cache);
    kv.free(1);  // its last block is cached (it held the entry); its first is still shared
    QCOMPARE(kv.evict_cached(1), 1);
    QVERIFY(kv.snapshot().blocks[spare].in_prefix_cache);
    std::vector<int64_t> slot_mapping;
    kv.append(2, std::vector<int32_t>{9, 10, 11, 12}, slot_mapping);
    PrefixHit hit = kv.find_prefix(iota_tokens(1, 13));
    QCOMPARE(hit.blocks, table_of(kv, 2));
    QVERIFY(kv.check_invariants().empty());
  }
};

QTEST_APPLESS_MAIN(TestKvPrefixCache)
#include "test_kv_prefix_cache.moc"
