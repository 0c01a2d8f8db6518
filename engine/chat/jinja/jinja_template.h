#pragma once
// A Jinja chat template, parsed once and rendered per conversation the way Hugging Face's
// apply_chat_template renders it with jinja2 (trim_blocks, lstrip_blocks, loop controls, an
// immutable sandbox, its tojson, raise_exception and strftime_now). The output is PromptText:
// what the template wrote is markup, what came from the context's data (Value::text: messages,
// tools) stays text whatever it spells.
// Left out: {% include/import/extends/call %}, recursive loops, *args, and format specs; each is
// an Error naming it when the template is parsed or rendered.

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/jinja/ast.h"
#include "engine/common/error.h"

namespace pagedchat::jinja {

// The template itself called raise_exception(message): it refuses this conversation.
class TemplateRaised : public Error {
 public:
  explicit TemplateRaised(const std::string& message) : Error(message) {}
};

// The render went past one of its budgets (render's comment): the template, not this
// conversation, is at fault.
class RenderBudgetExceeded : public Error {
 public:
  explicit RenderBudgetExceeded(const std::string& what) : Error(what) {}
};

struct RenderOptions {
  // The time strftime_now() formats (Llama 3.2, Granite and gpt-oss print today's date); the
  // current time when unset.
  std::function<std::time_t()> now;
  // A render that runs longer stops with an Error (as one past its step budget does): a model
  // file's template is untrusted code, and the server and the app render it per request.
  double time_limit_s = 2.0;
};

class Template {
 public:
  // Throws Error("line N: ...") naming what cannot be parsed.
  static Template parse(std::string_view source);

  // `context` holds the template's variables (messages, add_generation_prompt, bos_token, ...).
  // Throws TemplateRaised, or Error("line N: ...") for a failure while rendering, including a
  // render past its budget: a million steps, RenderOptions::time_limit_s, 16 MiB of text, a
  // million items in a list, macro calls 256 deep.
  PromptText render(const Dict& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace pagedchat::jinja
