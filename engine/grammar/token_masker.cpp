// Token masks from two caches and an ordered vocabulary walk (see token_masker.h).
#include "engine/grammar/token_masker.h"

#include <algorithm>
#include <cstring>

namespace pagedchat::grammar {
namespace {

// The stacks and the partial character as a cache key (pointers are stable while the grammar lives).
std::string key_of(const std::vector<Stack>& stacks, const std::string& pending) {
  std::string key = pending;
  key += '\0';
  for (const Stack& s : stacks) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(const Element*));
  }
  return key;
}

void set(TokenMask& mask, int32_t id) { mask.words[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64); }

}  // namespace

TokenMasker::TokenMasker(VocabularyBytes vocabulary) : vocabulary_(std::move(vocabulary)) {
  for (size_t i = 0; i < vocabulary_.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (vocabulary_.ends_generation(id)) end_tokens_.push_back(id);
    else if (!vocabulary_.is_control(id) && !vocabulary_.bytes(id).empty()) sorted_.push_back(id);
  }
  std::sort(sorted_.begin(), sorted_.end(),
            [&](int32_t a, int32_t b) { return vocabulary_.bytes(a) < vocabulary_.bytes(b); });
}

TokenMasker::PerGrammar& TokenMasker::caches_of(const GrammarMatcher& matcher) {
  const std::shared_ptr<const Grammar>& g = matcher.grammar_;
  auto it = grammars_.find(g.get());
  if (it != grammars_.end() && it->second.grammar.lock() == g) return it->second;
  // A new grammar (or a new one at a freed one's address): forget the grammars that are gone.
  std::erase_if(grammars_, [](const auto& kv) { return kv.second.grammar.expired(); });
  PerGrammar& caches = grammars_[g.get()];
  caches = PerGrammar{};
  caches.grammar = g;
  return caches;
}

const TokenMask& TokenMasker::allowed(const GrammarMatcher& matcher) {
  PerGrammar& caches = caches_of(matcher);
  const std::string state = key_of(matcher.stacks_, matcher.pending_);
  if (auto hit = caches.states.find(state); hit != caches.states.end()) {
    ++counts_.state_hits;
    return hit->second;
  }
  ++counts_.state_misses;
  // The stacks cut to their tops: a stack deeper than kLocalDepth keeps its top positions over
  // the cut.
  std::vector<Stack> tops;
  for (const Stack& s : matcher.stacks_) {
    if (s.size() <= kLocalDepth) {
      tops.push_back(s);
      continue;
    }
    Stack top{cut_context()};
    top.insert(top.end(), s.end() - static_cast<std::ptrdiff_t>(kLocalDepth), s.end());
    tops.push_back(std::move(top));
  }
  tops = deduplicated(std::move(tops));
  const std::string local_key = key_of(tops, matcher.pending_);
  auto local = caches.locals.find(local_key);
  if (local == caches.locals.end()) {
    ++counts_.local_walks;
    local = caches.locals.emplace(local_key, walk_vocabulary(matcher.grammar(), std::move(tops), matcher.pending_)).first;
  }
  TokenMask mask = local->second.accepted;
  for (const int32_t id : local->second.leaving)
    if (matcher.allows(vocabulary_.bytes(id))) set(mask, id);
  counts_.leaving_checked += static_cast<int64_t>(local->second.leaving.size());
  if (matcher.can_end())
    for (const int32_t id : end_tokens_) set(mask, id);
  if (caches.states.size() >= kMaxStates) caches.states.clear();
  return caches.states.emplace(state, std::move(mask)).first->second;
}

TokenMasker::Local TokenMasker::walk_vocabulary(const Grammar& g, std::vector<Stack> stacks,
                                                const std::string& pending) const {
  Local out;
  out.accepted.words.assign((vocabulary_.size() + 63) / 64, 0);
  walk(g, 0, sorted_.size(), 0, stacks, pending, false, out);
  return out;
}

// sorted_[lo, hi) share their first `depth` bytes, which took the grammar to `stacks` and
// `pending`; `left`: some way through those bytes left the local part.
void TokenMasker::walk(const Grammar& g, size_t lo, size_t hi, size_t depth, const std::vector<Stack>& stacks,
                       const std::string& pending, bool left, Local& out) const {
  size_t i = lo;
  for (; i < hi && vocabulary_.bytes(sorted_[i]).size() == depth; ++i) set(out.accepted, sorted_[i]);
  while (i < hi) {
    const char byte = vocabulary_.bytes(sorted_[i])[depth];
    // The tokens with this byte next: bytes sort unsigned (std::string compares as char_traits
    // does, by unsigned char), so they are the run that starts here.
    size_t j = i + 1;
    while (j < hi && vocabulary_.bytes(sorted_[j])[depth] == byte) ++j;
    std::vector<Stack> next = stacks;
    std::string next_pending = pending;
    bool escaped = false;
    const bool ok = advance_byte(g, next, next_pending, static_cast<unsigned char>(byte), &escaped);
    if (ok) walk(g, i, j, depth + 1, next, next_pending, left || escaped, out);
    else if (left || escaped) out.leaving.insert(out.leaving.end(), sorted_.begin() + i, sorted_.begin() + j);
    i = j;
  }
}

}  // namespace pagedchat::grammar
