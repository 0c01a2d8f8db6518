#pragma once
// The CLI's model argument: the given path, or the default model (models/model_paths.h)
// with a hint to fetch it when it is not there.

#include <string>

namespace pagedchat::cli {

// The --model value, or the default model; throws Error with the fetch hint if it is missing.
std::string resolve_model_path(const std::string& given);

}  // namespace pagedchat::cli
