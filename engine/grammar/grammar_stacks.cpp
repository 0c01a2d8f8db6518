// Stacks of grammar positions stepped over code points and UTF-8 bytes (see grammar_stacks.h).
#include "engine/grammar/grammar_stacks.h"

#include <algorithm>

namespace pagedchat::grammar {
namespace {

using K = ElementKind;

bool ends_alternative(const Element* e) { return e->kind == K::kEnd || e->kind == K::kAlt; }

// The length of the UTF-8 sequence a lead byte opens (0: not a lead byte).
int sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
}

// The code point bits a lead byte carries.
uint32_t lead_bits(unsigned char lead, int length) { return length == 1 ? lead : lead & (0xffu >> (length + 1)); }

// The least code point a sequence of this length may encode (shorter encodings are not UTF-8).
uint32_t least_code_point(int length) { return length == 2 ? 0x80 : length == 3 ? 0x800 : length == 4 ? 0x10000 : 0; }

bool at_cut(const Stack& s) { return !s.empty() && s.back() == cut_context(); }

// Advances the stacks over one code point; false when no stack admits it.
bool step(const Grammar& g, std::vector<Stack>& stacks, uint32_t c) {
  std::vector<Stack> next;
  for (const Stack& s : stacks) {
    if (s.empty() || at_cut(s)) continue;
    const Element* end = nullptr;
    if (!class_matches(s.back(), c, &end)) continue;
    Stack moved(s.begin(), s.end() - 1);
    if (!ends_alternative(end)) moved.push_back(end);
    expand(g, std::move(moved), next);
  }
  if (next.empty()) return false;
  stacks = deduplicated(std::move(next));
  return true;
}

// Whether some stack admits a character that starts with these bytes (the rest to come).
bool may_complete(const std::vector<Stack>& stacks, const std::string& pending) {
  // The code points these first bytes can begin: the lead byte's payload, then each
  // continuation's six bits, the rest anything.
  const unsigned char lead = static_cast<unsigned char>(pending[0]);
  const int length = sequence_length(lead);
  uint32_t low = lead_bits(lead, length);
  for (size_t i = 1; i < pending.size(); ++i) low = (low << 6) | (static_cast<unsigned char>(pending[i]) & 0x3f);
  const int missing = length - static_cast<int>(pending.size());
  low <<= 6 * missing;
  const uint32_t high = std::min<uint32_t>(low | ((1u << (6 * missing)) - 1), 0x10ffff);
  low = std::max(low, least_code_point(length));
  if (low > high) return false;                      // an overlong start, or past Unicode
  if (low >= 0xd800 && high <= 0xdfff) return false;  // only surrogates: never UTF-8
  // Admitted by a positive class when one of its ranges meets [low, high]; by a negated one
  // unless one excluded range covers it all (looser: the next bytes decide the rest).
  auto admits = [&](const Element* cls) {
    if (cls->kind == K::kCharAny) return true;
    const bool negated = cls->kind == K::kCharNot;
    for (const Element* e = cls;;) {
      const uint32_t a = e->value, b = e[1].kind == K::kCharRangeUpper ? e[1].value : a;
      if (!negated && a <= high && b >= low) return true;
      if (negated && a <= low && b >= high) return false;
      e += e[1].kind == K::kCharRangeUpper ? 2 : 1;
      if (e->kind != K::kCharAlt) return negated;
    }
  };
  return std::any_of(stacks.begin(), stacks.end(),
                     [&](const Stack& s) { return !s.empty() && !at_cut(s) && admits(s.back()); });
}

}  // namespace

const Element* cut_context() {
  static const Element cut{K::kEnd, 0xffffffffu};
  return &cut;
}

void expand(const Grammar& g, Stack stack, std::vector<Stack>& out) {
  if (stack.empty() || Grammar::starts_char(*stack.back()) || stack.back() == cut_context()) {
    out.push_back(std::move(stack));
    return;
  }
  // A rule reference on top (positions that end an alternative are never kept).
  const Element* ref = stack.back();
  stack.pop_back();
  if (!ends_alternative(ref + 1)) stack.push_back(ref + 1);  // what follows it, once it is read
  const Element* alt = g.rules[ref->value].data();
  for (;;) {
    Stack next = stack;
    if (!ends_alternative(alt)) next.push_back(alt);
    expand(g, std::move(next), out);
    while (!ends_alternative(alt)) ++alt;
    if (alt->kind == K::kEnd) break;
    ++alt;
  }
}

std::vector<Stack> deduplicated(std::vector<Stack> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  return stacks;
}

std::vector<Stack> initial_stacks(const Grammar& g) {
  std::vector<Stack> start;
  const Element* alt = g.rules[g.root].data();
  for (;;) {
    expand(g, ends_alternative(alt) ? Stack{} : Stack{alt}, start);
    while (!ends_alternative(alt)) ++alt;
    if (alt->kind == K::kEnd) break;
    ++alt;
  }
  return deduplicated(std::move(start));
}

bool advance_byte(const Grammar& g, std::vector<Stack>& stacks, std::string& pending, unsigned char b,
                  bool* escaped) {
  if (pending.empty()) {
    if (sequence_length(b) == 0) return false;  // not UTF-8
    const auto cut = std::remove_if(stacks.begin(), stacks.end(), at_cut);
    if (cut != stacks.end() && escaped) *escaped = true;
    stacks.erase(cut, stacks.end());
  } else if ((b & 0xc0) != 0x80) {
    return false;  // not UTF-8
  }
  pending += static_cast<char>(b);
  const int length = sequence_length(static_cast<unsigned char>(pending[0]));
  if (static_cast<int>(pending.size()) < length) return may_complete(stacks, pending);
  uint32_t c = lead_bits(static_cast<unsigned char>(pending[0]), length);
  for (size_t i = 1; i < pending.size(); ++i) c = (c << 6) | (static_cast<unsigned char>(pending[i]) & 0x3f);
  pending.clear();
  if (c < least_code_point(length) || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;  // not UTF-8
  return step(g, stacks, c);
}

bool may_take_byte(const std::vector<Stack>& stacks, const std::string& pending, unsigned char byte) {
  if (!pending.empty() || byte >= 0x80) return true;
  return std::any_of(stacks.begin(), stacks.end(),
                     [&](const Stack& s) { return !s.empty() && (at_cut(s) || class_matches(s.back(), byte)); });
}

bool may_end(const std::vector<Stack>& stacks) {
  return std::any_of(stacks.begin(), stacks.end(), [](const Stack& s) { return s.empty(); });
}

}  // namespace pagedchat::grammar
