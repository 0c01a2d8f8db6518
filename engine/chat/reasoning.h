#pragma once
// A thinking model's reply kept apart: models that think before they answer (Qwen 3, QwQ,
// DeepSeek R1 distills, SmolLM3) write <think> ... </think> and then the answer; the API returns
// the thinking as reasoning_content and the answer as content (as vLLM's reasoning parsers and
// llama.cpp's --reasoning-format do). Some templates open the thinking in the prompt (R1 ends its
// generation prompt with "<think>\n"): the reply then begins inside it. gpt-oss writes its
// thinking in harmony's analysis channel instead (harmony.h): the same splitter reads it.

#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/harmony.h"

namespace pagedchat {

inline constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

// Whether a chat template's model thinks (its template knows both markers).
bool template_thinks(std::string_view source);
// Whether a rendered prompt leaves the reply inside the thinking (it ends with an open <think>).
bool prompt_opens_thinking(std::string_view prompt);

// A reply's text, as it streams, split into thinking and answer.
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(bool starts_inside) : state_(starts_inside ? State::kInside : State::kStart) {}
  // A harmony reply's channels in place of <think> (gpt-oss: ChatTemplate::harmony()).
  static ReasoningSplitter harmony(HarmonySplitter::Start start = HarmonySplitter::Start::kHeader) {
    ReasoningSplitter s(false);
    s.harmony_.emplace(start);
    return s;
  }
  using Delta = ReasoningDelta;
  // The next piece of the reply; what can be said of it now (a marker half written waits).
  Delta push(std::string_view text);
  // At the reply's end: what was held back.
  Delta finish();

 private:
  enum class State { kStart, kInside, kAnswer };
  void run(Delta& out);
  State state_;
  std::string held_;
  bool answer_begun_ = false;  // the answer's leading blank lines are dropped
  std::optional<HarmonySplitter> harmony_;  // set: harmony, and the rest is unused
};

}  // namespace pagedchat
