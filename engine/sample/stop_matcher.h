#pragma once
// Finds stop strings in streamed text. Text that might be the start of a stop string is held
// back until it is clear, so a stop string never reaches the user, not even in part.

#include <string>
#include <string_view>
#include <vector>

namespace pagedchat {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds text; returns what can be emitted now. After a stop string is seen, stopped() is
  // true and the text before it has been returned (the stop string and the rest dropped).
  std::string push(std::string_view text);
  // At the end of generation: whatever was held back.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace pagedchat
