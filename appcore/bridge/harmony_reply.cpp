// A harmony reply in the app's <think> form (see harmony_reply.h).
#include "appcore/bridge/harmony_reply.h"

#include <utility>

#include "engine/chat/reasoning.h"

namespace {

using pagedchat::HarmonySplitter;

// Where a continued reply left off, read from the app's form of it.
HarmonySplitter::Start startOf(std::string_view continued) {
  if (continued.empty()) return HarmonySplitter::Start::kHeader;
  const bool thinking = continued.starts_with(pagedchat::kThinkOpen) && continued.find(pagedchat::kThinkClose) == std::string_view::npos;
  return thinking ? HarmonySplitter::Start::kInAnalysis : HarmonySplitter::Start::kInFinal;
}

}  // namespace

HarmonyReplyText::HarmonyReplyText(std::string_view continued)
    : splitter_(startOf(continued)), text_(continued) {
  opened_ = continued.starts_with(pagedchat::kThinkOpen);
  closed_ = !continued.empty() && startOf(continued) == HarmonySplitter::Start::kInFinal;
}

std::string HarmonyReplyText::push(std::string_view piece) { return write(splitter_.push(piece)); }

std::string HarmonyReplyText::finish() { return write(splitter_.finish()); }

std::string HarmonyReplyText::write(const pagedchat::ReasoningDelta& d) {
  std::string out;
  // Thinking after the answer has begun (a second analysis message: rare) is left out: the
  // app's reply has one thinking part, at its start.
  if (!d.reasoning.empty() && !closed_) {
    if (!std::exchange(opened_, true)) out += std::string(pagedchat::kThinkOpen) + "\n";
    out += d.reasoning;
  }
  // The answer, or a call (whose message is not the app's text: ToolTurn reads it), ends the thinking.
  if (!d.content.empty() || !splitter_.calls().empty()) {
    if (opened_ && !closed_) out += "\n" + std::string(pagedchat::kThinkClose) + "\n\n";
    closed_ = true;
    out += d.content;
  }
  text_ += out;
  return out;
}
