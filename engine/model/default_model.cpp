// The default model's path (see default_model.h).
#include "engine/model/default_model.h"

#include <cstdlib>

namespace pagedchat {

std::string default_model_path() {
  if (const char* m = std::getenv("PAGEDCHAT_MODEL"); m && *m) return m;
  const char* home = std::getenv("HOME");
  std::string base = home ? home : ".";
  return base + "/.cache/pagedchat/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace pagedchat
