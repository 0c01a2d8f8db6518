#pragma once
// Where the default model lives: $PAGEDCHAT_MODEL, else the file installer/fetch-models.sh
// caches under ~/.cache/pagedchat/models.

#include <string>

namespace pagedchat::cli {

std::string default_model_path();
// The --model value, or the default model; throws Error with the fetch hint if it is missing.
std::string resolve_model_path(const std::string& given);

}  // namespace pagedchat::cli
