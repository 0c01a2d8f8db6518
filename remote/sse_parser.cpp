#include "remote/sse_parser.h"

namespace pagedchat::remote {

void SseParser::feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event) {
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";  // UTF-8's byte-order mark may open the stream
  for (const char c : bytes) {
    if (overflowed_) return;
    if (bom_seen_ < kBom.size()) {
      if (c == kBom[bom_seen_]) {
        ++bom_seen_;
        continue;
      }
      // Not a BOM after all: its bytes so far were the stream's own.
      const std::string_view taken = kBom.substr(0, bom_seen_);
      bom_seen_ = kBom.size();
      for (const char t : taken) take(t, on_event);
    }
    take(c, on_event);
  }
}

void SseParser::take(char c, const std::function<void(const SseEvent&)>& on_event) {
  if (overflowed_) return;
  if (c == '\n' && last_was_cr_) {  // CRLF: one line end
    last_was_cr_ = false;
    return;
  }
  last_was_cr_ = c == '\r';
  if (c == '\r' || c == '\n') {
    const std::string text = std::move(line_);
    line_.clear();
    line(text, on_event);
    return;
  }
  line_.push_back(c);
  if (++event_bytes_ > max_event_bytes_) overflowed_ = true;
}

void SseParser::line(std::string_view text, const std::function<void(const SseEvent&)>& on_event) {
  if (text.empty()) {  // a blank line dispatches the event, if it has data
    if (has_data_) on_event(pending_);
    pending_ = {};
    has_data_ = false;
    event_bytes_ = 0;
    return;
  }
  if (text.front() == ':') return;  // a comment (servers send them to keep a connection alive)
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "error") {
    pending_.error.append(value);
    has_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) pending_.id = std::string(value);
  }
  // "retry" and unknown fields are ignored, as the spec says.
}

}  // namespace pagedchat::remote
