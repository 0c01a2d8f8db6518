#pragma once
// Server-sent events (the WHATWG "text/event-stream" format) read incrementally: bytes go in as
// they arrive, in pieces of any size, and each complete event comes out once. What an OpenAI-
// compatible stream sends (`data: {...}` lines, a blank line after each, `data: [DONE]` last),
// and what the spec also allows (CRLF or CR line ends, `:` comments, `event:` and `id:` fields,
// several data lines joined by newlines, no space after the colon).
// A hostile or broken server cannot make it grow without bound: an event past max_event_bytes
// sets overflowed() and the rest of the stream is ignored.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace pagedchat::remote {

struct SseEvent {
  std::string event;  // empty: the default type, "message"
  std::string data;   // the data lines, joined by '\n'
  std::string id;
  // Not in the spec: llama.cpp's server sends a stream's failure as an "error:" line of its own
  // (its JSON), not as data. Kept, so that its message reaches the user.
  std::string error;
};

class SseParser {
 public:
  explicit SseParser(size_t max_event_bytes = size_t{4} << 20) : max_event_bytes_(max_event_bytes) {}

  // Parses bytes, calling on_event for each event they complete.
  void feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);
  bool overflowed() const { return overflowed_; }
  // Bytes of a line or an event not yet ended: a stream that stops here was cut mid-event.
  bool midEvent() const { return !line_.empty() || has_data_ || !pending_.event.empty(); }

 private:
  void take(char c, const std::function<void(const SseEvent&)>& on_event);
  void line(std::string_view text, const std::function<void(const SseEvent&)>& on_event);

  size_t max_event_bytes_;
  std::string line_;  // the line read so far
  bool last_was_cr_ = false;  // a CR ended the last line: a LF right after it is the same line end
  bool has_data_ = false;
  size_t bom_seen_ = 0;  // bytes of a leading byte-order mark read (3: past it)
  bool overflowed_ = false;
  size_t event_bytes_ = 0;
  SseEvent pending_;
};

}  // namespace pagedchat::remote
