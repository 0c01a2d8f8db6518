// Finding GGUF files where other tools keep them (see model_scan.h).
#include "models/model_scan.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "models/model_paths.h"

namespace fs = std::filesystem;

namespace pagedchat::models {
namespace {

constexpr int kMaxDepth = 6;           // a user's folder of folders, not a whole disk
constexpr size_t kMaxEntries = 200000;  // entries visited per place, so a huge tree cannot hang a scan

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool has_gguf_magic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

bool is_gguf_name(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".gguf";
}

// Regular files (after links) named *.gguf below dir, depth-limited, hidden folders skipped.
std::vector<fs::path> gguf_files_below(const fs::path& dir, int max_depth) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  size_t visited = 0;
  for (; !ec && it != end && visited < kMaxEntries; it.increment(ec), ++visited) {
    const fs::path& p = it->path();
    std::error_code e2;
    if (it->is_directory(e2)) {
      if (it.depth() + 1 >= max_depth || (p.filename().string().rfind('.', 0) == 0 && p.filename() != ".")) it.disable_recursion_pending();
      continue;
    }
    if (is_gguf_name(p) && fs::is_regular_file(p, e2)) out.push_back(p);
  }
  return out;
}

std::string hf_label(const fs::path& repo_dir) {
  // models--OWNER--NAME -> OWNER/NAME
  std::string name = repo_dir.filename().string().substr(std::strlen("models--"));
  const size_t sep = name.find("--");
  if (sep != std::string::npos) name.replace(sep, 2, "/");
  return name;
}

void scan_hugging_face(const ScanPlace& place, std::vector<FoundModel>& out) {
  std::error_code ec;
  for (fs::directory_iterator repo(place.dir, ec), end; !ec && repo != end; repo.increment(ec)) {
    const std::string name = repo->path().filename().string();
    if (name.rfind("models--", 0) != 0) continue;
    for (const fs::path& f : gguf_files_below(repo->path() / "snapshots", kMaxDepth))
      out.push_back({f.string(), place.source, hf_label(repo->path()) + "/" + f.filename().string()});
  }
}

void scan_ollama(const ScanPlace& place, std::vector<FoundModel>& out) {
  const fs::path manifests = fs::path(place.dir) / "manifests";
  std::error_code ec;
  fs::recursive_directory_iterator it(manifests, fs::directory_options::skip_permission_denied, ec), end;
  size_t visited = 0;
  for (; !ec && it != end && visited < kMaxEntries; it.increment(ec), ++visited) {
    std::error_code e2;
    if (!it->is_regular_file(e2)) continue;
    // manifests/REGISTRY/NAMESPACE/MODEL/TAG
    const fs::path rel = fs::relative(it->path(), manifests, e2);
    std::vector<std::string> parts;
    for (const auto& part : rel) parts.push_back(part.string());
    if (parts.size() != 4) continue;
    std::ifstream in(it->path());
    const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!manifest.is_object() || !manifest.contains("layers") || !manifest["layers"].is_array()) continue;
    for (const auto& layer : manifest["layers"]) {
      if (!layer.is_object() || layer.value("mediaType", "") != "application/vnd.ollama.image.model") continue;
      std::string digest = layer.value("digest", "");
      if (digest.rfind("sha256:", 0) != 0) continue;
      digest.replace(6, 1, "-");  // the blob's file name: sha256-HEX
      const fs::path blob = fs::path(place.dir) / "blobs" / digest;
      if (!fs::is_regular_file(blob, e2) || !has_gguf_magic(blob)) continue;
      const std::string model = parts[1] == "library" ? parts[2] : parts[1] + "/" + parts[2];
      out.push_back({blob.string(), place.source, model + ":" + parts[3]});
    }
  }
}

}  // namespace

std::vector<ScanPlace> standard_places(const std::vector<std::string>& extra_folders) {
  const std::string home = env("HOME");
  const std::string cache = env("XDG_CACHE_HOME").empty() ? home + "/.cache" : env("XDG_CACHE_HOME");
  const std::string data = env("XDG_DATA_HOME").empty() ? home + "/.local/share" : env("XDG_DATA_HOME");
  std::string hf = env("HF_HUB_CACHE");
  if (hf.empty()) hf = env("HF_HOME").empty() ? cache + "/huggingface/hub" : env("HF_HOME") + "/hub";
  const std::string llama = env("LLAMA_CACHE").empty() ? cache + "/llama.cpp" : env("LLAMA_CACHE");
  std::vector<ScanPlace> places = {
      {"PagedChat", models_dir(), PlaceLayout::kFolder},
      {"Hugging Face", hf, PlaceLayout::kHuggingFace},
      {"llama.cpp", llama, PlaceLayout::kFolder},
      {"LM Studio", home + "/.lmstudio/models", PlaceLayout::kFolder},
      {"LM Studio", home + "/.cache/lm-studio/models", PlaceLayout::kFolder},  // its layout before 0.3
      {"GPT4All", data + "/nomic.ai/GPT4All", PlaceLayout::kFolder},
      {"Ollama", env("OLLAMA_MODELS").empty() ? home + "/.ollama/models" : env("OLLAMA_MODELS"), PlaceLayout::kOllama},
      {"Ollama", "/usr/share/ollama/.ollama/models", PlaceLayout::kOllama},  // the Linux service's install
  };
  for (const std::string& f : extra_folders) places.push_back({"Folder", f, PlaceLayout::kFolder});
  return places;
}

std::vector<FoundModel> scan_places(const std::vector<ScanPlace>& places) {
  std::vector<FoundModel> found;
  for (const ScanPlace& place : places) {
    std::error_code ec;
    if (place.layout == PlaceLayout::kFile) {
      if (fs::is_regular_file(place.dir, ec)) found.push_back({place.dir, place.source, fs::path(place.dir).filename().string()});
      continue;
    }
    if (!fs::is_directory(place.dir, ec)) continue;
    switch (place.layout) {
      case PlaceLayout::kHuggingFace: scan_hugging_face(place, found); break;
      case PlaceLayout::kOllama: scan_ollama(place, found); break;
      case PlaceLayout::kFile: break;  // above
      case PlaceLayout::kFolder:
        for (const fs::path& f : gguf_files_below(place.dir, kMaxDepth)) {
          // Our own downloads from the hub are kept as hf/OWNER/NAME/FILE: label them so.
          std::string label = f.filename().string();
          const fs::path rel = fs::relative(f, place.dir, ec);
          if (place.source == "PagedChat" && !ec && rel.begin() != rel.end() && *rel.begin() == "hf")
            label = fs::relative(f, fs::path(place.dir) / "hf", ec).string();
          found.push_back({f.string(), place.source, label});
        }
        break;
    }
  }
  // Each file once: the first place that lists it names it.
  std::set<std::string> seen;
  std::vector<FoundModel> unique;
  for (FoundModel& m : found) {
    std::error_code ec;
    const std::string real = fs::weakly_canonical(m.path, ec).string();
    if (seen.insert(ec ? m.path : real).second) unique.push_back(std::move(m));
  }
  return unique;
}

}  // namespace pagedchat::models
