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
  build_trie();
}

void TokenMasker::build_trie() {
  // Breadth first: each node's children are made together, so they are contiguous.
  nodes_.push_back(Node{0, static_cast<uint32_t>(sorted_.size())});
  std::vector<size_t> depth_of{0};
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const size_t depth = depth_of[k];
    uint32_t i = nodes_[k].lo;
    const uint32_t hi = nodes_[k].hi;
    while (i < hi && vocabulary_.bytes(sorted_[i]).size() == depth) ++i;
    nodes_[k].ends = i;
    nodes_[k].first = static_cast<uint32_t>(nodes_.size());
    while (i < hi) {
      // The tokens with this byte next: bytes sort unsigned (std::string compares as
      // char_traits does, by unsigned char), so they are the run that starts here.
      const char byte = vocabulary_.bytes(sorted_[i])[depth];
      uint32_t j = i + 1;
      while (j < hi && vocabulary_.bytes(sorted_[j])[depth] == byte) ++j;
      Node child{i, j};
      child.byte = static_cast<unsigned char>(byte);
      nodes_.push_back(child);
      depth_of.push_back(depth + 1);
      i = j;
    }
    nodes_[k].n = static_cast<uint32_t>(nodes_.size()) - nodes_[k].first;
  }
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
  TokenMask mask;
  mask.words.assign((vocabulary_.size() + 63) / 64, 0);
  for (const Stack& stack : matcher.stacks_) {
    if (stack.empty()) continue;  // the text may end: the end tokens below
    const TokenMask& m = stack_mask(caches, matcher.grammar(), stack, matcher.pending_);
    for (size_t w = 0; w < mask.words.size(); ++w) mask.words[w] |= m.words[w];
  }
  if (matcher.can_end())
    for (const int32_t id : end_tokens_) set(mask, id);
  if (caches.states.size() >= kMaxStates) caches.states.clear();
  return caches.states.emplace(state, std::move(mask)).first->second;
}

const TokenMask& TokenMasker::stack_mask(PerGrammar& caches, const Grammar& g, const Stack& stack, const std::string& pending) {
  const std::string key = key_of({stack}, pending);
  if (auto hit = caches.stacks.find(key); hit != caches.stacks.end()) return hit->second;
  ++counts_.stack_misses;
  // The stack cut to its top: a stack deeper than kLocalDepth keeps its top positions over the cut.
  Stack top = stack;
  if (top.size() > kLocalDepth) {
    top.assign(stack.end() - static_cast<std::ptrdiff_t>(kLocalDepth), stack.end());
    top.insert(top.begin(), cut_context());
  }
  const std::string local_key = key_of({top}, pending);
  auto local = caches.locals.find(local_key);
  if (local == caches.locals.end()) {
    ++counts_.local_walks;
    local = caches.locals.emplace(local_key, walk_vocabulary(g, {std::move(top)}, pending)).first;
  }
  TokenMask mask = local->second.accepted;
  for (const int32_t id : local->second.leaving) {
    std::vector<Stack> stacks{stack};
    std::string partial = pending;
    bool ok = true;
    for (const char byte : vocabulary_.bytes(id))
      if (!(ok = advance_byte(g, stacks, partial, static_cast<unsigned char>(byte)))) break;
    if (ok) set(mask, id);
  }
  counts_.leaving_checked += static_cast<int64_t>(local->second.leaving.size());
  if (caches.stacks.size() >= kMaxStates) caches.stacks.clear();
  return caches.stacks.emplace(key, std::move(mask)).first->second;
}

TokenMasker::Local TokenMasker::walk_vocabulary(const Grammar& g, std::vector<Stack> stacks,
                                                const std::string& pending) const {
  Local out;
  out.accepted.words.assign((vocabulary_.size() + 63) / 64, 0);
  walk(g, nodes_[0], stacks, pending, false, out);
  return out;
}

// The node's first bytes took the grammar to `stacks` and `pending`; `left`: some way through
// those bytes left the local part.
void TokenMasker::walk(const Grammar& g, const Node& node, const std::vector<Stack>& stacks, const std::string& pending,
                       bool left, Local& out) const {
  for (uint32_t i = node.lo; i < node.ends; ++i) set(out.accepted, sorted_[i]);
  std::vector<Stack> next;
  std::string next_pending;
  for (uint32_t c = node.first; c < node.first + node.n; ++c) {
    const Node& child = nodes_[c];
    if (!may_take_byte(stacks, pending, child.byte)) {
      if (left) out.leaving.insert(out.leaving.end(), sorted_.begin() + child.lo, sorted_.begin() + child.hi);
      continue;
    }
    next = stacks;
    next_pending = pending;
    bool escaped = false;
    if (advance_byte(g, next, next_pending, child.byte, &escaped)) walk(g, child, next, next_pending, left || escaped, out);
    else if (left || escaped) out.leaving.insert(out.leaving.end(), sorted_.begin() + child.lo, sorted_.begin() + child.hi);
  }
}

}  // namespace pagedchat::grammar
