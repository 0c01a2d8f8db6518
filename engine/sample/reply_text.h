#pragma once
// A reply's tokens as the text a user sees: pieces joined into whole UTF-8 characters, stop
// strings cut out (held back until they are ruled out). The engine turns each sequence's
// tokens into its token events' text with it, so every client shows the same text.

#include <string>
#include <string_view>
#include <vector>

#include "engine/sample/stop_matcher.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat {

class ReplyText {
 public:
  explicit ReplyText(std::vector<std::string> stops) : stop_(std::move(stops)) {}

  // Adds a token's piece; returns the text that can be shown now.
  std::string push(std::string_view piece) { return stop_.push(utf8_.push(piece)); }
  // At the end of the reply: what was held back (nothing once a stop string was seen).
  std::string flush() {
    std::string tail = stop_.push(utf8_.flush());
    return tail + stop_.flush();
  }
  bool stopped() const { return stop_.stopped(); }

 private:
  StopMatcher stop_;
  Utf8StreamDecoder utf8_;
};

}  // namespace pagedchat
