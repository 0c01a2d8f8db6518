// `tokenize`: prints the token ids of a text, space-separated, on one line.

#include <cstdio>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"

namespace pagedchat::cli {

int cmd_tokenize(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "text"}, {"no-special", "pieces"});
  auto text = args.get("text");
  if (!text) fail("tokenize needs --text TEXT");
  // Only the vocabulary is needed: no weights are checked or loaded.
  GgufFile file = GgufFile::open(resolve_model_path(args.get_or("model", "")));
  auto tok = Tokenizer::from_gguf(file);
  bool special = !args.flag("no-special");
  std::vector<int32_t> ids = tok->encode(*text, special, special);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::printf(i ? " %d" : "%d", ids[i]);
  }
  std::printf("\n");
  if (args.flag("pieces")) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, std::string(tok->token_text(id)).c_str());
  }
  return 0;
}

}  // namespace pagedchat::cli
