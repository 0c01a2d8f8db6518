#include "engine/kv/disk/kv_disk_ledger.h"

#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "engine/kv/disk/disk_files.h"

namespace fs = std::filesystem;

namespace pagedchat {
namespace {

constexpr size_t kMaxModels = 256;  // lines kept in <dir>/models, most recent last

// Replaces path's contents with text: written to a file of this writer's own (process and
// serial: two engines of one process may write at once), then renamed.
void replace_file(const std::string& path, const std::string& text) {
  static std::atomic<uint64_t> serial{0};
  const std::string aside = path + "." + std::to_string(::getpid()) + "." + std::to_string(++serial) + ".tmp";
  if (write_file(aside, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())) != 0) return;
  std::error_code ec;
  fs::rename(aside, path, ec);
  if (ec) fs::remove(aside, ec);
}

// A small regular file's text; empty when missing, not a regular file (a FIFO under the name
// must not stall the engine) or larger than max_bytes.
std::string read_small_file(const std::string& path, size_t max_bytes) {
  std::vector<uint8_t> bytes;
  if (read_file(path, bytes, max_bytes) != FileRead::ok) return {};
  return std::string(bytes.begin(), bytes.end());
}

// A dead writer's "<name>.<pid>.<n>.tmp" beside `file` is removed (the store's scan looks only
// inside the namespaces' folders).
void remove_dead_writers(const std::string& file) {
  const fs::path p(file);
  const std::string prefix = p.filename().string() + ".";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(p.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".tmp") && writer_is_dead(name)) fs::remove(e.path(), ec);
  }
}

}  // namespace

bool kv_disk_record_model(const std::string& dir, const std::string& model_path, uint64_t model_identity) {
  std::error_code ec;
  const std::string key = fs::absolute(model_path, ec).lexically_normal().string();
  if (key.empty() || key.find('\n') != std::string::npos) return false;
  const std::string file = (fs::path(dir) / "models").string();
  // Lines "<identity, 16 hex digits>\t<absolute path>".
  std::vector<std::pair<uint64_t, std::string>> models;
  bool changed = false;
  remove_dead_writers(file);
  {
    std::istringstream in(read_small_file(file, 1 << 20));
    std::string line;
    while (std::getline(in, line)) {
      const size_t tab = line.find('\t');
      if (tab != 16) continue;  // not ours: skipped, and dropped at the rewrite
      uint64_t id = 0;
      if (std::sscanf(line.c_str(), "%16" SCNx64, &id) != 1) continue;
      std::string path = line.substr(tab + 1);
      if (path == key) {
        changed = changed || id != model_identity;
        continue;  // rewritten last, with this identity
      }
      models.emplace_back(id, std::move(path));
    }
  }
  models.emplace_back(model_identity, key);
  const size_t first = models.size() > kMaxModels ? models.size() - kMaxModels : 0;
  std::string text;
  for (size_t i = first; i < models.size(); ++i) {
    char id[17];
    std::snprintf(id, sizeof id, "%016" PRIx64, models[i].first);
    text += std::string(id) + "\t" + models[i].second + "\n";
  }
  replace_file(file, text);
  return changed;
}

double kv_disk_load_prompt_rate(const std::string& namespace_dir) {
  std::istringstream in(read_small_file((fs::path(namespace_dir) / "prompt_rate").string(), 256));
  double rate = 0;
  if (!(in >> rate) || !(rate > 0) || rate > 1e18) return 0;  // damaged or absurd: not known
  return rate;
}

void kv_disk_save_prompt_rate(const std::string& namespace_dir, double flops_per_second) {
  if (!(flops_per_second > 0)) return;
  std::ostringstream text;
  text.precision(17);  // read back as written
  text << flops_per_second << "\n";
  replace_file((fs::path(namespace_dir) / "prompt_rate").string(), text.str());
}

}  // namespace pagedchat
