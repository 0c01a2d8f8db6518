#pragma once
// PoolFrame values for the block-pool view's tests: one built by hand (every cell state at a
// known block) and one read from a real KvManager, with a stand-in detokenizer that writes
// token id t as "w<t>".

#include <QStringList>

#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "engine/kv/kv_manager.h"
#include "appcore/pool/pool_frame.h"

namespace kvtest {

using namespace pagedchat;

inline std::shared_ptr<const std::function<QString(const std::vector<int32_t>&)>> wordDetokenizer() {
  return std::make_shared<const std::function<QString(const std::vector<int32_t>&)>>([](const std::vector<int32_t>& ids) {
    QStringList words;
    for (int32_t t : ids) words << QStringLiteral("w%1").arg(t);
    return words.join(QLatin1Char(' '));
  });
}

inline std::vector<int32_t> iota(int32_t first, int32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

inline KvBlockInfo block(BlockState state, int32_t refs, int32_t filled, std::vector<SequenceId> owners, bool cached = false) {
  KvBlockInfo b;
  b.state = state;
  b.ref_count = refs;
  b.num_filled = filled;
  b.has_hash = cached;
  b.in_prefix_cache = cached;
  b.owners = std::move(owners);
  return b;
}

// Block size 4, 8 blocks, 2 host blocks:
//   0: in use by seq 1 ("Alpha", colour 0), full, in the prefix cache (tokens 10..13)
//   1: shared by seq 1 and seq 2 ("Beta", colour 1), 2 slotMapping filled (tokens 14, 15)
//   2: in use by seq 2, 1 slot filled (token 20)
//   3: cached (ref 0, full, in the prefix cache)
//   4..7: free
//   host 0: swapped, seq 3 ("Gamma", colour 2, swapped out), 3 slotMapping (tokens 30..32); host 1 free
// Seq 1 holds 6 tokens in blocks 0, 1. Seq 2's table {1, 2} is made by hand (a real manager
// would give a fork the parent's whole table); the view draws what it gets, and the tooltip of
// block 1 reads its first owner, seq 1.
inline PoolFrame handFrame() {
  PoolFrame f;
  f.snapshot.block_size = 4;
  f.snapshot.blocks = {block(BlockState::in_use, 1, 4, {1}, true),
                       block(BlockState::in_use, 2, 2, {1, 2}),
                       block(BlockState::in_use, 1, 1, {2}),
                       block(BlockState::cached, 0, 4, {}, true),
                       block(BlockState::free, 0, 0, {}),
                       block(BlockState::free, 0, 0, {}),
                       block(BlockState::free, 0, 0, {}),
                       block(BlockState::free, 0, 0, {})};
  f.snapshot.host_blocks = {block(BlockState::swapped, 1, 3, {3}), block(BlockState::free, 0, 0, {})};
  f.snapshot.cached_lru = {3};
  f.sequences = {{1, QStringLiteral("Alpha"), 0, {0, 1}, {10, 11, 12, 13, 14, 15}},
                 {2, QStringLiteral("Beta"), 1, {1, 2}, {14, 15, 16, 17, 20}},
                 {3, QStringLiteral("Gamma"), 2, {0}, {30, 31, 32}}};
  f.stats.kv.block_size = 4;
  f.stats.kv.prefix_lookup_tokens = 20;
  f.stats.kv.prefix_hit_tokens = 5;
  f.tokensPerSecond = 42.5;
  f.contiguousReservedTokens = 3 * 64;
  f.maxContext = 64;
  f.stepIndex = 7;
  f.lastStepSummary = QStringLiteral("step 7: 2 sequences ran, 2 tokens");
  f.detokenize = wordDetokenizer();
  return f;
}

struct ChatSeq {
  SequenceId id;
  QString title;
  int colorIndex;
};

// A frame of the manager's state, listing the given sequences that it still holds.
inline PoolFrame frameFrom(KvManager& kv, const std::vector<ChatSeq>& seqs, int64_t maxContext = 64) {
  PoolFrame f;
  f.snapshot = kv.snapshot();
  f.stats.kv = kv.stats();
  f.events = kv.take_events();
  f.maxContext = maxContext;
  for (const ChatSeq& s : seqs) {
    if (!kv.has_sequence(s.id)) continue;
    std::span<const int32_t> table = kv.block_table(s.id);
    f.sequences.push_back({s.id, s.title, s.colorIndex, {table.begin(), table.end()}, kv.stored_tokens(s.id)});
    f.contiguousReservedTokens += maxContext;
  }
  f.detokenize = wordDetokenizer();
  return f;
}

inline void runPrompt(KvManager& kv, SequenceId seq, const std::vector<int32_t>& prompt) {
  PrefixHit hit = kv.find_prefix(prompt);
  kv.start(seq, hit);
  std::vector<int64_t> slotMapping;
  kv.append(seq, std::span(prompt).subspan(hit.num_tokens), slotMapping);
}

inline void append(KvManager& kv, SequenceId seq, const std::vector<int32_t>& tokens) {
  std::vector<int64_t> slotMapping;
  kv.append(seq, tokens, slotMapping);
}

}  // namespace kvtest
