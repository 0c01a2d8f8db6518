// The --model value or the default model's path, and the hint to fetch it.
#include "app/cli/model_argument.h"

#include <filesystem>

#include "engine/common/error.h"
#include "models/model_paths.h"

namespace pagedchat::cli {

std::string resolve_model_path(const std::string& given) {
  if (!given.empty()) return given;
  std::string p = default_model_path();
  if (!std::filesystem::exists(p))
    fail("the default model '%s' is not there; run `pagedchat-cli models pull default` to download it (about 93 MB), or pass --model PATH (`pagedchat-cli models list` shows the GGUFs on this machine)", p.c_str());
  return p;
}

}  // namespace pagedchat::cli
