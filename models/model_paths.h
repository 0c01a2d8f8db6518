#pragma once
// Where models live, for every front end: the models folder (~/.cache/pagedchat/models, where
// downloads go) and the default model, $PAGEDCHAT_MODEL, else its file in that folder
// (`pagedchat-cli models pull default`, the app's welcome view or installer/fetch-models.sh
// put it there).

#include <string>

namespace pagedchat {

inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

std::string models_dir();
std::string default_model_path();

}  // namespace pagedchat
