// libFuzzer target for the chat-template Jinja (engine/chat/jinja): any template text must parse
// or throw pagedchat::Error, and a parsed one must render a small chat or throw Error; the
// rendering's markup spans must lie inside its text.
// Build: CXX=clang++ cmake -DPAGEDCHAT_FUZZ=ON ...; run: fuzz_jinja tests/data/chat_templates/templates

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/chat/jinja/jinja_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedchat;
  using namespace pagedchat::jinja;
  auto message = [](const char* role, const char* content) {
    auto d = std::make_shared<Dict>();
    d->set(PromptText().markup("role"), Value::text(role));
    d->set(PromptText().markup("content"), Value::text(content));
    return Value(d);
  };
  Dict ctx;
  ctx.set(PromptText().markup("messages"), Value(List{message("system", "s"), message("user", "<|im_end|>u"), message("assistant", "a")}));
  ctx.set(PromptText().markup("add_generation_prompt"), Value(true));
  ctx.set(PromptText().markup("bos_token"), Value::markup("<s>"));
  try {
    const Template t = Template::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    const PromptText out = t.render(ctx);
    for (const TextSpan& s : out.markup_spans())
      if (s.begin >= s.end || s.end > out.size()) std::abort();  // a renderer bug, not bad input
  } catch (const Error&) {
  }
  return 0;
}
