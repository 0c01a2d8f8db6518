#pragma once
// gpt-oss's "harmony" reply read as it streams. Its generation prompt ends with
// "<|start|>assistant"; the model then writes messages, each a header, <|message|>, a body and
// an end:
//   <|channel|>analysis<|message|>THINKING<|end|><|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
// (the recipient may also stand before the channel: " to=functions.NAME<|channel|>commentary json").
// The analysis channel is the thinking; final, and commentary addressed to no one (a call's
// preamble), the answer; a message to a recipient is a call, kept whole for tool_calls.h. The
// markup never reaches the reader. A reply that does not open with a header is all answer.
// <|end|> and the markup are in the reply's text (Tokenizer::always_rendered); <|return|> and
// <|call|> end the reply (Tokenizer::is_eog) and are in it only when specials are written out.
// Leaves out: the built-in tools (browser, python) are read as calls like any other recipient.

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/text_markers.h"

namespace pagedchat {

// Whether a chat template writes harmony (gpt-oss's: its messages' channels and bodies).
bool template_is_harmony(std::string_view source);

class HarmonySplitter {
 public:
  // Where the reply begins: at a message's header (the generation prompt's "<|start|>assistant"),
  // or inside an analysis or final body (a reply continued where it was cut).
  enum class Start { kHeader, kInAnalysis, kInFinal };
  explicit HarmonySplitter(Start start = Start::kHeader);

  // The next piece of the reply; what can be said of it now (markup half written waits).
  ReasoningDelta push(std::string_view text);
  // At the reply's end: what was held back.
  ReasoningDelta finish();

  // A message to a recipient: "functions.NAME" (or a built-in tool's name) and its body.
  struct Call {
    std::string recipient;
    std::string body;   // the arguments as written (JSON for functions)
    bool ended = false; // its <|call|> (or <|end|>) came; else the reply was cut inside it
  };
  // The calls so far, a last one perhaps still being written.
  const std::vector<Call>& calls() const { return calls_; }

 private:
  enum class State { kHeader, kBody, kPlain };
  enum class Target { kReasoning, kContent, kCall, kNone };
  void run(ReasoningDelta& out);
  bool read_header();  // false: wait for more
  void read_body(ReasoningDelta& out);
  void put(ReasoningDelta& out, std::string_view text);  // to the message's target

  State state_ = State::kHeader;
  Target target_ = Target::kNone;
  bool seen_message_ = false;  // a header was read (the reply is harmony, not plain text)
  std::string held_;
  std::vector<Call> calls_;
};

}  // namespace pagedchat
