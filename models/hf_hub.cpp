// The Hugging Face hub's URL shapes and headers (see hf_hub.h).
#include "models/hf_hub.h"

#include <cstdlib>
#include <filesystem>

#include "models/sha256.h"

namespace fs = std::filesystem;

namespace pagedchat::models {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

std::string header(const HttpHead& h, const char* name) {
  auto it = h.headers.find(name);
  return it == h.headers.end() ? std::string() : it->second;
}

std::string unquote(std::string s) {
  if (s.rfind("W/", 0) == 0) s = s.substr(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::vector<std::string> hub_auth_headers() {
  const char* token = std::getenv("HF_TOKEN");
  if (!token || !*token) return {};
  return {std::string("Authorization: Bearer ") + token};
}

std::string hub_endpoint() {
  std::string e = std::getenv("HF_ENDPOINT") ? std::getenv("HF_ENDPOINT") : "";
  if (e.empty()) e = "https://huggingface.co";
  while (e.size() > 1 && e.back() == '/') e.pop_back();
  return e;
}

void check_hub_file(const HubFile& f) {
  const size_t slash = f.repo.find('/');
  auto part_ok = [](const std::string& p) {
    if (p.empty() || p == "." || p == ".." || p.size() > 96) return false;
    for (char c : p)
      if (!name_char(c)) return false;
    return true;
  };
  if (slash == std::string::npos || !part_ok(f.repo.substr(0, slash)) || !part_ok(f.repo.substr(slash + 1)))
    fail("'%s' is not a Hugging Face repository name (owner/name)", f.repo.c_str());
  if (f.file.empty() || f.file.front() == '/' || f.file.size() > 256)
    fail("'%s' is not a file name in a repository", f.file.c_str());
  size_t start = 0;
  while (start <= f.file.size()) {
    size_t end = f.file.find('/', start);
    if (end == std::string::npos) end = f.file.size();
    if (!part_ok(f.file.substr(start, end - start))) fail("'%s' is not a file name in a repository", f.file.c_str());
    start = end + 1;
  }
  if (!part_ok(f.revision)) fail("'%s' is not a revision name", f.revision.c_str());
}

std::string resolve_url(const HubFile& f, const std::string& endpoint) {
  return endpoint + "/" + f.repo + "/resolve/" + f.revision + "/" + f.file;
}

std::string hub_destination(const HubFile& f, const std::string& models_dir) {
  return (fs::path(models_dir) / "hf" / f.repo / f.file).string();
}

HubFileInfo fetch_hub_file_info(const HubFile& f, const std::string& endpoint, const std::atomic<bool>* cancel) {
  check_hub_file(f);
  std::string url = resolve_url(f, endpoint);
  HttpHead h = http_head(url, hub_auth_headers(), cancel);
  // A renamed repository answers with a redirect to its new resolve URL on the hub itself,
  // without the file's headers: followed (a few times at most), as huggingface_hub does.
  for (int hop = 0; hop < 5 && h.status >= 300 && h.status < 400 && header(h, "x-linked-etag").empty() &&
                    header(h, "x-linked-size").empty() && !header(h, "location").empty() &&
                    origin_of(resolve_location(url, header(h, "location"))) == origin_of(url);
       ++hop) {
    url = resolve_location(url, header(h, "location"));
    h = http_head(url, hub_auth_headers(), cancel);
  }
  if (h.status == 404 || h.status == 401 || h.status == 403) {
    const std::string code = header(h, "x-error-code");
    if (code == "EntryNotFound") fail("'%s' has no file '%s' (revision %s)", f.repo.c_str(), f.file.c_str(), f.revision.c_str());
    if (code == "RevisionNotFound") fail("'%s' has no revision '%s'", f.repo.c_str(), f.revision.c_str());
    if (code == "GatedRepo") fail("'%s' is gated: accept its terms on the hub and set HF_TOKEN", f.repo.c_str());
    if (code == "RepoNotFound" || h.status == 401)
      fail("no repository '%s' on %s (or it is private: set HF_TOKEN)", f.repo.c_str(), endpoint.c_str());
    fail("%s: %s", url.c_str(), describe_status(h.status).c_str());
  }
  if (h.status >= 400) fail("%s: %s", url.c_str(), describe_status(h.status).c_str());
  HubFileInfo info;
  info.commit = header(h, "x-repo-commit");
  std::string etag = unquote(header(h, "x-linked-etag"));
  if (etag.empty()) etag = unquote(header(h, "etag"));
  if (is_sha256_hex(etag)) info.sha256 = etag;  // small non-LFS files carry a git hash instead
  // A redirect's own Content-Length is its body's, not the file's.
  const std::string size = !header(h, "x-linked-size").empty() ? header(h, "x-linked-size")
                           : h.status == 200                    ? header(h, "content-length")
                                                                : std::string();
  info.size = size.empty() ? 0 : std::strtoull(size.c_str(), nullptr, 10);
  const std::string location = header(h, "location");
  info.download_url = h.status >= 300 && h.status < 400 && !location.empty() ? resolve_location(url, location) : url;
  return info;
}

std::string pull_hub_file(const HubFile& f, const std::string& models_dir,
                          std::function<void(const DownloadProgress&)> on_progress, const std::atomic<bool>* cancel) {
  const std::string endpoint = hub_endpoint();
  const HubFileInfo info = fetch_hub_file_info(f, endpoint, cancel);
  const std::string dest = hub_destination(f, models_dir);
  std::error_code ec;
  if (fs::is_regular_file(dest, ec) && !info.sha256.empty() && fs::file_size(dest, ec) == info.size &&
      sha256_of_file(dest) == info.sha256)
    return dest;
  DownloadRequest r;
  r.url = info.download_url;
  r.destination = dest;
  r.expected_sha256 = info.sha256;
  r.expected_size = info.size;
  if (origin_of(r.url) == origin_of(endpoint)) r.headers = hub_auth_headers();
  r.on_progress = std::move(on_progress);
  r.cancel = cancel;
  return download_file(r).path;
}

}  // namespace pagedchat::models
