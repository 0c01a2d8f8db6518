// Thinking and answer apart (see reasoning.h).
#include "engine/chat/reasoning.h"

#include "engine/chat/text_markers.h"

namespace pagedchat {

bool template_thinks(std::string_view source) {
  return source.find(kThinkOpen) != std::string_view::npos && source.find(kThinkClose) != std::string_view::npos;
}

bool prompt_opens_thinking(std::string_view prompt) {
  const size_t open = prompt.rfind(kThinkOpen);
  if (open == std::string_view::npos) return false;
  return prompt.find(kThinkClose, open) == std::string_view::npos &&
         prompt.substr(open + kThinkOpen.size()).find_first_not_of(" \t\r\n") == std::string_view::npos;
}

ReasoningSplitter::Delta ReasoningSplitter::push(std::string_view text) {
  if (harmony_) return harmony_->push(text);
  held_ += text;
  Delta out;
  run(out);
  return out;
}

void ReasoningSplitter::run(Delta& out) {
  if (state_ == State::kStart) {
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return;  // only blank so far
    const std::string_view rest = std::string_view(held_).substr(first);
    if (rest.starts_with(kThinkOpen)) {
      held_.erase(0, first + kThinkOpen.size());
      state_ = State::kInside;
    } else if (kThinkOpen.starts_with(rest)) {
      return;  // perhaps the marker, half written
    } else {
      state_ = State::kAnswer;
    }
  }
  if (state_ == State::kInside) {
    const size_t close = held_.find(kThinkClose);
    if (close == std::string::npos) {
      const size_t keep = partial_marker(held_, kThinkClose);
      out.reasoning += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    out.reasoning += held_.substr(0, close);
    held_.erase(0, close + kThinkClose.size());
    state_ = State::kAnswer;
  }
  if (!answer_begun_) {
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) {
      held_.clear();
      return;
    }
    held_.erase(0, first);
    answer_begun_ = true;
  }
  out.content += held_;
  held_.clear();
}

ReasoningSplitter::Delta ReasoningSplitter::finish() {
  if (harmony_) return harmony_->finish();
  Delta out;
  run(out);
  // A marker that never finished: its bytes were the text's after all.
  if (state_ == State::kInside) out.reasoning += held_;
  else out.content += held_;
  held_.clear();
  return out;
}

}  // namespace pagedchat
