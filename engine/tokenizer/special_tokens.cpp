// Byte trie of special-token texts and the leftmost-longest split.

#include "engine/tokenizer/special_tokens.h"

namespace pagedchat {

SpecialTokenMatcher::SpecialTokenMatcher() : nodes_(1) {}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  for (const auto& [b, next] : nodes_[node].next)
    if (b == byte) return next;
  return -1;
}

void SpecialTokenMatcher::add(std::string_view text, int32_t id, bool always) {
  if (text.empty()) return;
  int32_t node = 0;
  for (char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    int32_t next = child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_[node].next.emplace_back(byte, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  // Two tokens with the same text: the first one (lowest id) wins, as in a lookup by text.
  if (nodes_[node].id < 0) {
    nodes_[node].id = id;
    nodes_[node].always = always;
  }
  first_byte_[static_cast<uint8_t>(text[0])] = true;
}

SpecialTokenMatcher::Match SpecialTokenMatcher::match_at(std::string_view text, size_t pos,
                                                         size_t special_end) const {
  Match best;
  if (pos >= text.size() || !first_byte_[static_cast<uint8_t>(text[pos])]) return best;
  int32_t node = 0;
  for (size_t k = pos; k < text.size(); ++k) {
    node = child(node, static_cast<uint8_t>(text[k]));
    if (node < 0) break;
    const Node& n = nodes_[node];
    if (n.id >= 0 && (n.always || k + 1 <= special_end)) best = {n.id, k + 1 - pos};
  }
  return best;
}

std::vector<SpecialTokenMatcher::Fragment> SpecialTokenMatcher::split(std::string_view text,
                                                                      bool parse_special) const {
  const TextSpan all{0, text.size()};
  return split(text, parse_special ? std::span<const TextSpan>(&all, 1) : std::span<const TextSpan>());
}

std::vector<SpecialTokenMatcher::Fragment> SpecialTokenMatcher::split(std::string_view text,
                                                                      std::span<const TextSpan> special_spans) const {
  std::vector<Fragment> out;
  size_t plain_start = 0, pos = 0, span = 0;
  while (pos < text.size()) {
    while (span < special_spans.size() && special_spans[span].end <= pos) ++span;
    // Where a control token starting here may end: the end of the span holding pos, if any.
    const bool inside = span < special_spans.size() && special_spans[span].begin <= pos;
    const Match m = match_at(text, pos, inside ? special_spans[span].end : pos);
    if (m.id < 0) {
      ++pos;
      continue;
    }
    if (pos > plain_start) out.push_back({text.substr(plain_start, pos - plain_start), -1});
    out.push_back({text.substr(pos, m.len), m.id});
    pos += m.len;
    plain_start = pos;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

}  // namespace pagedchat
