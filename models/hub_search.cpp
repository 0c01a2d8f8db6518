// Hub search, a repository's GGUF files and the fit check (see hub_search.h).
#include "models/hub_search.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/ggml_type.h"
#include "models/hf_hub.h"
#include "models/http_download.h"
#include "models/model_summary.h"

namespace pagedchat::models {
namespace {

std::string url_escape(const std::string& s) {
  std::unique_ptr<char, decltype(&curl_free)> out(curl_easy_escape(nullptr, s.c_str(), static_cast<int>(s.size())), &curl_free);
  return out ? std::string(out.get()) : std::string();
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The hub's answer, or an Error naming what went wrong.
std::string hub_get(const std::string& url, const std::atomic<bool>* cancel) {
  const HttpText r = http_get_text(url, hub_auth_headers(), cancel);
  if (r.status == 401 || r.status == 403) fail("the hub refused the request (HTTP %ld): set HF_TOKEN for a private or gated repository", r.status);
  if (r.status == 404) fail("the hub has no such repository (HTTP 404)");
  if (r.status != 200) fail("the hub answered %s", describe_status(r.status).c_str());
  return r.body;
}

nlohmann::json parse_array(const std::string& json, const char* what) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_array()) fail("the hub's answer is not a list of %s", what);
  return j;
}

uint64_t count_of(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

}  // namespace

std::string hub_search_url(const std::string& endpoint, const std::string& words, int limit) {
  return endpoint + "/api/models?search=" + url_escape(words) + "&filter=gguf&sort=downloads&direction=-1&limit=" +
         std::to_string(std::clamp(limit, 1, 100));
}

std::vector<HubRepo> parse_hub_search(const std::string& json) {
  std::vector<HubRepo> repos;
  for (const nlohmann::json& m : parse_array(json, "models")) {
    if (!m.is_object()) continue;
    const auto id = m.find("id");
    if (id == m.end() || !id->is_string()) continue;
    repos.push_back({id->get<std::string>(), count_of(m, "downloads"), count_of(m, "likes")});
  }
  return repos;
}

std::vector<HubRepo> search_hub(const std::string& words, int limit, const std::string& endpoint, const std::atomic<bool>* cancel) {
  return parse_hub_search(hub_get(hub_search_url(endpoint, words, limit), cancel));
}

std::string hub_tree_url(const std::string& endpoint, const std::string& repo, const std::string& revision) {
  check_hub_file({repo, "x.gguf", revision});
  return endpoint + "/api/models/" + repo + "/tree/" + url_escape(revision) + "?recursive=true";
}

std::vector<HubGgufFile> parse_hub_tree(const std::string& json) {
  static const std::regex kSplit(R"((.*)-(\d{5})-of-(\d{5})\.gguf)", std::regex::icase);
  std::map<std::string, HubGgufFile> files;  // by path (a split model: by its first part's)
  for (const nlohmann::json& e : parse_array(json, "files")) {
    if (!e.is_object() || e.value("type", "") != "file") continue;
    const std::string path = e.value("path", "");
    if (path.size() < 5 || upper(path.substr(path.size() - 5)) != ".GGUF") continue;
    const auto lfs = e.find("lfs");
    const uint64_t size = lfs != e.end() && lfs->is_object() ? count_of(*lfs, "size") : count_of(e, "size");
    std::smatch m;
    if (std::regex_match(path, m, kSplit)) {
      const std::string first = m[1].str() + "-00001-of-" + m[3].str() + ".gguf";
      HubGgufFile& f = files[first];
      f.path = first;
      f.size += size;
      f.split_parts = std::stoi(m[3].str());
    } else {
      files[path] = {path, size, {}, 0};
    }
  }
  std::vector<HubGgufFile> out;
  for (auto& [path, f] : files) {
    f.quantization = quantization_in_name(path.substr(path.find_last_of('/') + 1));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<HubGgufFile> list_hub_gguf_files(const std::string& repo, const std::string& endpoint, const std::atomic<bool>* cancel) {
  return parse_hub_tree(hub_get(hub_tree_url(endpoint, repo), cancel));
}

std::string quantization_in_name(const std::string& file) {
  const std::string name = upper(file);
  std::string best;
  auto is_word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<std::string> names = {"MXFP4"};
  for (uint64_t id = 0; id < 64; ++id)
    if (std::string n = file_type_name(id); !n.empty()) names.push_back(n);
  for (const std::string& n : names) {
    for (size_t at = name.find(n); at != std::string::npos; at = name.find(n, at + 1)) {
      const bool starts = at == 0 || !is_word_char(name[at - 1]);
      const size_t end = at + n.size();
      const bool ends = end == name.size() || !is_word_char(name[end]);
      if (starts && ends && n.size() > best.size()) best = n;
    }
  }
  return best;
}

bool quantization_runs_here(const std::string& quantization) {
  if (quantization.empty()) return true;
  std::string base = upper(quantization);
  // The K-quant mixes name their main block type: Q4_K_M is Q4_K blocks (and some Q6_K).
  if (const size_t k = base.find("_K"); k != std::string::npos) base = base.substr(0, k + 2);
  for (uint32_t id = 0; id < 64; ++id)
    if (const auto traits = ggml_type_traits(id); traits && upper(std::string(traits->name)) == base) return traits->computable;
  return false;
}

FitCheck check_fit(const HubGgufFile& file, uint64_t available) {
  using V = FitCheck::Verdict;
  if (file.split_parts > 1)
    return {V::does_not_run, format("split into %d files: split GGUFs are not supported yet", file.split_parts)};
  if (!quantization_runs_here(file.quantization))
    return {V::does_not_run, format("%s weights do not run here yet", file.quantization.c_str())};
  const uint64_t needed = file.size + file.size / 10 + (256ull << 20);
  if (available == 0) return {V::fits, format("needs about %s of memory", format_bytes(needed).c_str())};
  const std::string sizes = format("needs about %s of the %s free", format_bytes(needed).c_str(), format_bytes(available).c_str());
  if (needed > available) return {V::too_big, "too big: " + sizes};
  if (needed > available / 10 * 8) return {V::tight, "tight: " + sizes};
  return {V::fits, "fits: " + sizes};
}

uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

}  // namespace pagedchat::models
