#pragma once
// Markers in a reply as it streams (<think>, </think>, <tool_call>, [TOOL_CALLS]): a marker may
// arrive over several tokens, so the text that may be its beginning waits until it is told apart.

#include <algorithm>
#include <string>
#include <string_view>

namespace pagedchat {

// The length of the longest end of `text` that begins `marker` (a marker perhaps half written).
inline size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

// A piece of a reply split as it streams: its thinking and its answer (reasoning.h, harmony.h).
struct ReasoningDelta {
  std::string reasoning, content;
};

}  // namespace pagedchat
