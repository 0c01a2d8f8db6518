#pragma once
// A chat rendered as prompt text that remembers who wrote each byte: the chat template's markup
// (where "<|im_start|>" is the control token it names) or the messages (where it is eight
// characters a user typed). Tokenized with Tokenizer::encode_markup, only the markup's special-
// token texts become control tokens, so no message can open a turn, close one or play the
// system: user text stays text. Everything else about the prompt compares and cuts as a string.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/special_tokens.h"

namespace pagedchat {

class PromptText {
 public:
  PromptText() = default;

  // Appends what the template writes around the messages.
  PromptText& markup(std::string_view s);
  // Appends a message's content (or a reply's text): plain characters, whatever they spell.
  PromptText& text(std::string_view s);
  PromptText& append(const PromptText& other);

  const std::string& str() const { return str_; }
  size_t size() const { return str_.size(); }
  bool empty() const { return str_.empty(); }
  // The markup's byte ranges, sorted, disjoint and never adjacent (adjacent ones are merged).
  const std::vector<TextSpan>& markup_spans() const { return markup_; }

  // Bytes [from, size()) with their markup spans, cut where they cross `from`.
  PromptText suffix(size_t from) const;
  // Bytes [begin, end) likewise.
  PromptText slice(size_t begin, size_t end) const;
  // Whether every byte is markup (an empty text is).
  bool all_markup() const { return str_.empty() || (markup_.size() == 1 && markup_[0].end - markup_[0].begin == str_.size()); }
  // `s` made from this text: markup when all of this was, else text, so that a transformation
  // (upper, replace, tojson) never turns a user's bytes into markup.
  PromptText derived(std::string s) const;
  // Whether this begins with `prefix`: its bytes, and its markup over those bytes.
  bool starts_with(const PromptText& prefix) const;
  bool operator==(const PromptText&) const = default;

 private:
  std::string str_;
  std::vector<TextSpan> markup_;
};

}  // namespace pagedchat
