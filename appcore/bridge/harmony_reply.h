#pragma once
// A gpt-oss reply (harmony's channels: engine/chat/harmony.h) written as the app keeps a thinking
// model's reply, "<think>\nTHINKING\n</think>\n\nANSWER": the transcript folds it
// (appcore/chat/reply_thinking.h) and later prompts leave the thinking out, as for <think>
// models, and the template's own markup never reaches the chat. Only ever appended to, so it
// streams as the reply does. Qt-free; the engine thread's (EngineBridge, ToolTurn).

#include <string>
#include <string_view>

#include "engine/chat/harmony.h"

class HarmonyReplyText {
 public:
  // continued: the reply a turn continues, as the app keeps it (empty: a new reply). Its form
  // says where the model left off: inside its thinking, or in its answer.
  explicit HarmonyReplyText(std::string_view continued = {});
  // The reply's next piece, as the engine wrote it: what the app's text gains.
  std::string push(std::string_view piece);
  // At the reply's end: what was held back.
  std::string finish();
  // The whole reply in the app's form: the continued one, then all that push and finish gave.
  const std::string& text() const { return text_; }

 private:
  std::string write(const pagedchat::ReasoningDelta& d);

  pagedchat::HarmonySplitter splitter_;
  bool opened_ = false;  // "<think>" written
  bool closed_ = false;  // the answer begun (any "</think>" written)
  std::string text_;
};
