#pragma once
// Where the default model lives, for every front end: $PAGEDCHAT_MODEL, else the file
// installer/fetch-models.sh caches under ~/.cache/pagedchat/models.

#include <string>

namespace pagedchat {

std::string default_model_path();

}  // namespace pagedchat
