#pragma once
// Files of Hugging Face model repositories: where a file is (the hub's resolve URL), what the
// hub says of it before the download (the commit, the LFS object's sha256 and size, read off the
// resolve URL's redirect as huggingface_hub does), and the verified download into our models
// folder. The hub is $HF_ENDPOINT (default https://huggingface.co); $HF_TOKEN, when set, is
// sent to it (never to the storage host it redirects to).

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "models/http_download.h"

namespace pagedchat::models {

struct HubFile {
  std::string repo;  // "owner/name"
  std::string file;  // a path in the repository, e.g. "SmolLM2-135M-Instruct-Q4_K_M.gguf"
  std::string revision = "main";
};

struct HubFileInfo {
  std::string commit;        // X-Repo-Commit
  std::string sha256;        // the LFS object id (X-Linked-Etag), lowercase hex; empty if none
  uint64_t size = 0;         // X-Linked-Size, else Content-Length
  std::string download_url;  // where the bytes are (the redirect's target)
};

std::string hub_endpoint();  // $HF_ENDPOINT without a trailing '/', or https://huggingface.co
// "Authorization: Bearer $HF_TOKEN" when the token is set: for requests to the hub only.
std::vector<std::string> hub_auth_headers();
// Throws Error when the repository or file name could escape a folder or is malformed.
void check_hub_file(const HubFile& f);
std::string resolve_url(const HubFile& f, const std::string& endpoint);
// Where a pulled file is kept: <models_dir>/hf/<owner>/<name>/<file>.
std::string hub_destination(const HubFile& f, const std::string& models_dir);

// Asks the hub about a file; throws Error with the hub's reason (no such repository or file,
// gated, unreachable).
HubFileInfo fetch_hub_file_info(const HubFile& f, const std::string& endpoint, const std::atomic<bool>* cancel = nullptr);

// Downloads a file (checked against the hub's sha256 and size) unless a verified copy is there;
// returns its path. A cancel (DownloadCancelled) keeps what was downloaded for the next pull.
std::string pull_hub_file(const HubFile& f, const std::string& models_dir,
                          std::function<void(const DownloadProgress&)> on_progress = {},
                          const std::atomic<bool>* cancel = nullptr);

}  // namespace pagedchat::models
