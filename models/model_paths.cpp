// The models folder and the default model's path (see model_paths.h).
#include "models/model_paths.h"

#include <cstdlib>

namespace pagedchat {

std::string models_dir() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/pagedchat/models";
}

std::string default_model_path() {
  if (const char* m = std::getenv("PAGEDCHAT_MODEL"); m && *m) return m;
  return models_dir() + "/" + kDefaultModelFile;
}

}  // namespace pagedchat
