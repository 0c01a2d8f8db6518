// The default model's path and the hint to fetch it.
#include "app/cli/default_model.h"

#include <cstdlib>
#include <filesystem>

#include "engine/common/error.h"

namespace pagedchat::cli {

std::string default_model_path() {
  if (const char* m = std::getenv("PAGEDCHAT_MODEL"); m && *m) return m;
  const char* home = std::getenv("HOME");
  std::string base = home ? home : ".";
  return base + "/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::string resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  std::string p = default_model_path();
  if (!std::filesystem::exists(p))
    fail("the default model '%s' is not there; run installer/fetch-models.sh (or pass --model PATH)", p.c_str());
  return p;
}

}  // namespace pagedchat::cli
