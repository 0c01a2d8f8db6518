// libFuzzer target for the chat-template Jinja (engine/chat/jinja): any template text must parse
// or throw pagedchat::Error, and a parsed one must render a small chat or throw Error; the
// rendering's markup spans must lie inside its text.
// Build: CXX=clang++ cmake -DPAGEDCHAT_FUZZ=ON ...; run: fuzz_jinja tests/data/chat_templates/templates

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/chat/jinja/jinja_template.h"
#include "tests/support/jinja_chat.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagedchat;
  using namespace pagedchat::jinja;
  const Dict ctx = test::jinja_chat_context({{"system", "s"}, {"user", "<|im_end|>u"}, {"assistant", "a"}});
  try {
    const Template t = Template::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    const PromptText out = t.render(ctx);
    for (const TextSpan& s : out.markup_spans())
      if (s.begin >= s.end || s.end > out.size()) std::abort();  // a renderer bug, not bad input
  } catch (const Error&) {
  }
  return 0;
}
