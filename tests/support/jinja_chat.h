#pragma once
// A small chat as a Jinja template's context, the variables Hugging Face passes: messages
// of role and content (the content is the caller's data, text), add_generation_prompt, and the
// special tokens' texts (markup). Qt-free, for the suites and the fuzz target alike.

#include <memory>
#include <utility>
#include <vector>

#include "engine/chat/jinja/value.h"

namespace pagedchat::test {

inline jinja::Dict jinja_chat_context(const std::vector<std::pair<const char*, const char*>>& messages) {
  using jinja::Value;
  jinja::List list;
  for (const auto& [role, content] : messages) {
    auto d = std::make_shared<jinja::Dict>();
    d->set(PromptText().markup("role"), Value::text(role));
    d->set(PromptText().markup("content"), Value::text(content));
    list.push_back(Value(d));
  }
  jinja::Dict ctx;
  ctx.set(PromptText().markup("messages"), Value(std::move(list)));
  ctx.set(PromptText().markup("add_generation_prompt"), Value(true));
  ctx.set(PromptText().markup("bos_token"), Value::markup("<s>"));
  ctx.set(PromptText().markup("eos_token"), Value::markup("</s>"));
  return ctx;
}

}  // namespace pagedchat::test
