#pragma once
// Finds the texts of special tokens inside a text, leftmost-longest (as Hugging Face's
// added-token matcher does), with a byte trie: a walk from each position costs only as many
// steps as the text shares with some token's text.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace pagedchat {

// Bytes [begin, end) of a text.
struct TextSpan {
  size_t begin = 0, end = 0;
  bool operator==(const TextSpan&) const = default;
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher();
  // always: matched even when the caller does not ask for special tokens (user-defined
  // tokens: the model saw them as single tokens in all text); otherwise only then (control).
  void add(std::string_view text, int32_t id, bool always);

  struct Match {
    int32_t id = -1;
    size_t len = 0;
  };
  // The longest token whose text starts at text[pos] (id -1 when none). A control token counts
  // only when its text ends by `special_end` (npos: anywhere; pos: never).
  Match match_at(std::string_view text, size_t pos, size_t special_end) const;

  struct Fragment {
    std::string_view text;  // plain text, when id == -1
    int32_t id = -1;        // a special token
  };
  // Splits text into runs of plain text and special tokens, in order.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;
  // The same, where a control token's text becomes that token only when it lies wholly inside
  // one of `special_spans` (sorted, disjoint): elsewhere it is plain text.
  std::vector<Fragment> split(std::string_view text, std::span<const TextSpan> special_spans) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // byte -> child node
    int32_t id = -1;                                // a token ends here
    bool always = false;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  std::vector<Node> nodes_;    // [0] is the root
  bool first_byte_[256] = {};  // some token starts with this byte
};

}  // namespace pagedchat
