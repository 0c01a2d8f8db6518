#include "engine/kv/disk/kv_disk_ledger.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

namespace pagedchat {
namespace {

constexpr size_t kMaxModels = 256;  // lines kept in <dir>/models, most recent last

// Replaces path's contents with text: written to a file of this process's own, then renamed.
void replace_file(const std::string& path, const std::string& text) {
  const std::string aside = path + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(aside, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(aside, ec);
      return;
    }
  }
  std::error_code ec;
  fs::rename(aside, path, ec);
  if (ec) fs::remove(aside, ec);
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
  {
    std::ifstream in(file);
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
  std::ifstream in((fs::path(namespace_dir) / "prompt_rate").string());
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
