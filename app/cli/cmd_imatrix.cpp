// `pagedchat-cli imatrix --model M --text FILE`: an importance matrix for `quantize --imatrix`,
// measured by our engine over a calibration text (engine/quantize/calibration.h), written in
// llama.cpp's GGUF imatrix form.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "app/cli/model_argument.h"
#include "engine/common/error.h"
#include "engine/quantize/calibration.h"

namespace pagedchat::cli {

int cmd_imatrix(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "text", "output", "chunk", "chunks", "threads"}, {"quiet"});
  const std::string model_path = resolve_model_path(args.get_or("model", ""));
  const auto text_path = args.get("text");
  if (!text_path) fail("imatrix needs --text FILE: a calibration text (plain text, a few thousand words or more)");
  const std::string text = read_text_file(*text_path, "--text");
  const std::filesystem::path mp(model_path);
  const std::string output =
      args.get_or("output", (mp.parent_path() / (mp.stem().string() + ".imatrix.gguf")).string());

  quantize::CalibrationOptions o;
  o.chunk_tokens = args.get_int("chunk", 512, 16, 1 << 16);
  o.max_chunks = args.get_int("chunks", 0, 0, 1 << 20);
  o.num_threads = args.get_int("threads", 0, 0, 1024);
  o.dataset_name = std::filesystem::path(*text_path).filename().string();
  const bool quiet = args.flag("quiet");

  auto model = Model::load(model_path);
  const auto matrix = quantize::measure_importance(*model, text, o, [&](const quantize::CalibrationProgress& p) {
    if (!quiet) std::fprintf(stderr, "\rchunk %d/%d, perplexity %.3f   ", p.chunk, p.num_chunks, p.perplexity);
  });
  if (!quiet) std::fputc('\n', stderr);
  matrix.save(output);
  std::printf("wrote %s: %zu matrices over %u chunks of %u tokens of %s\n", output.c_str(), matrix.entries.size(),
              matrix.chunk_count, matrix.chunk_size, o.dataset_name.c_str());
  return 0;
}

}  // namespace pagedchat::cli
