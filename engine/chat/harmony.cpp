// gpt-oss's harmony messages read apart (see harmony.h).
#include "engine/chat/harmony.h"

#include <algorithm>

namespace pagedchat {
namespace {

constexpr std::string_view kStart = "<|start|>", kChannel = "<|channel|>", kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>", kReturn = "<|return|>", kCallEnd = "<|call|>";
constexpr std::string_view kTo = " to=";
// What ends a body: <|end|> (a message), <|return|> and <|call|> (the reply), and <|start|>
// for a model that opens its next message without closing this one.
constexpr std::string_view kBodyEnds[] = {kEnd, kReturn, kCallEnd, kStart};

// A header's word after `at` (a channel's name, a recipient): up to a space or markup.
std::string_view word_at(std::string_view header, size_t at) {
  const size_t end = header.find_first_of(" <", at);
  return header.substr(at, (end == std::string_view::npos ? header.size() : end) - at);
}

// Whether text, at the reply's start, is or may yet become a message's header.
bool may_be_header(std::string_view text) {
  for (std::string_view opening : {kChannel, kStart, kTo})
    if (text.starts_with(opening) || opening.starts_with(text)) return true;
  return false;
}

}  // namespace

bool template_is_harmony(std::string_view source) {
  return source.find(kChannel) != std::string_view::npos && source.find(kMessage) != std::string_view::npos;
}

HarmonySplitter::HarmonySplitter(Start start) {
  if (start == Start::kHeader) return;
  state_ = State::kBody;
  target_ = start == Start::kInAnalysis ? Target::kReasoning : Target::kContent;
  seen_message_ = true;
}

ReasoningDelta HarmonySplitter::push(std::string_view text) {
  held_ += text;
  ReasoningDelta out;
  run(out);
  return out;
}

void HarmonySplitter::run(ReasoningDelta& out) {
  for (;;) {
    switch (state_) {
      case State::kPlain:
        out.content += held_;
        held_.clear();
        return;
      case State::kHeader:
        if (!read_header()) return;
        break;
      case State::kBody:
        read_body(out);
        if (state_ == State::kBody) return;  // the body goes on in the next piece
        break;
    }
  }
}

bool HarmonySplitter::read_header() {
  const size_t message = held_.find(kMessage);
  if (message == std::string::npos) {
    // A reply that opens with no header at all is not harmony: it is all answer.
    if (!seen_message_ && !held_.empty() && !may_be_header(held_)) state_ = State::kPlain;
    return state_ == State::kPlain;
  }
  const std::string_view header(held_.data(), message);
  // The last channel counts: gpt-oss-20b at times writes a stray "<|channel|>commentary" first.
  const size_t channel_at = header.rfind(kChannel);
  const std::string_view channel = channel_at == std::string_view::npos ? "" : word_at(header, channel_at + kChannel.size());
  const size_t to = header.find(kTo);
  const std::string_view recipient = to == std::string_view::npos ? "" : word_at(header, to + kTo.size());
  if (!recipient.empty() && recipient != "assistant") {
    target_ = Target::kCall;
    calls_.push_back({std::string(recipient), {}, false});
  } else {
    target_ = channel == "analysis" ? Target::kReasoning : Target::kContent;  // final, a preamble, or no channel
  }
  held_.erase(0, message + kMessage.size());
  state_ = State::kBody;
  seen_message_ = true;
  return true;
}

void HarmonySplitter::read_body(ReasoningDelta& out) {
  size_t end = std::string::npos;
  std::string_view marker;
  for (std::string_view m : kBodyEnds)
    if (const size_t at = held_.find(m); at < end) end = at, marker = m;
  if (end == std::string::npos) {
    size_t keep = 0;
    for (std::string_view m : kBodyEnds) keep = std::max(keep, partial_marker(held_, m));
    put(out, std::string_view(held_).substr(0, held_.size() - keep));
    held_.erase(0, held_.size() - keep);
    return;
  }
  put(out, std::string_view(held_).substr(0, end));
  if (target_ == Target::kCall && marker != kStart) calls_.back().ended = true;
  held_.erase(0, end + marker.size());
  state_ = State::kHeader;
  target_ = Target::kNone;
}

void HarmonySplitter::put(ReasoningDelta& out, std::string_view text) {
  switch (target_) {
    case Target::kReasoning: out.reasoning += text; break;
    case Target::kContent: out.content += text; break;
    case Target::kCall: calls_.back().body += text; break;
    case Target::kNone: break;
  }
}

ReasoningDelta HarmonySplitter::finish() {
  ReasoningDelta out;
  run(out);
  if (state_ == State::kBody) put(out, held_);  // a marker's beginning that never finished: text
  // Text that only began like a header ("<|chan", " to") was the answer; a header cut before
  // its <|message|> was markup.
  else if (state_ == State::kHeader && !seen_message_ && !held_.starts_with(kChannel) && !held_.starts_with(kStart) &&
           !held_.starts_with(kTo))
    out.content += held_;
  held_.clear();
  return out;
}

}  // namespace pagedchat
