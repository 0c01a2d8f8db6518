#pragma once
// Downloading one file over HTTP(S) with libcurl, as a model download needs it: redirects
// followed, written to "<destination>.part" and renamed only once complete and verified, a
// dropped connection resumed with a Range request (also across runs: a .part left by a
// cancel or a crash is continued), the size and sha256 checked, the disk's free space checked
// before writing. Blocking: the app runs it on a thread of its own and cancels it through an
// atomic flag.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/common/error.h"

namespace pagedchat::models {

struct DownloadProgress {
  uint64_t received = 0;  // bytes of the file so far, those of a resumed .part included
  uint64_t total = 0;     // 0 while unknown
};

struct DownloadRequest {
  std::string url;
  std::string destination;      // the final path; its folder is created
  std::string expected_sha256;  // lowercase hex; empty: not checked
  uint64_t expected_size = 0;   // 0: taken from the response
  std::vector<std::string> headers;  // extra request headers ("Authorization: Bearer ...")
  std::function<void(const DownloadProgress&)> on_progress;  // on the downloading thread
  const std::atomic<bool>* cancel = nullptr;                 // set: stop, keeping the .part
  int max_attempts = 6;     // connections tried, resuming after each that drops
  long stall_seconds = 30;  // a connection that moves no byte for this long counts as dropped
};

struct DownloadResult {
  std::string path;
  uint64_t bytes = 0;
  std::string sha256;
};

// Thrown when DownloadRequest::cancel was set; the .part file is kept for a later resume.
class DownloadCancelled : public Error {
 public:
  DownloadCancelled() : Error("the download was cancelled") {}
};

// Throws Error naming the cause: an HTTP status, a size or sha256 mismatch (the .part is then
// deleted: its bytes are wrong), too little disk space, or the connection failing
// max_attempts times.
DownloadResult download_file(const DownloadRequest& request);

// Throws Error ("not enough disk space in DIR: 1.20 GB needed, 800.0 MB free") when the file
// system of `directory` has less than `bytes` free.
void check_space(const std::string& directory, uint64_t bytes);

// The path a download writes to until it is complete: named after the file's hash when it is
// known, so a .part left by another revision of the same name is never continued with these bytes.
inline std::string partial_path(const std::string& destination, const std::string& sha256 = {}) {
  return destination + (sha256.size() >= 16 ? "." + sha256.substr(0, 16) : std::string()) + ".part";
}

struct HttpHead {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value of each
};

// A HEAD request that does not follow redirects (the hub's metadata is on the redirect itself).
// Throws Error when no response comes; DownloadCancelled when `cancel` is set meanwhile.
HttpHead http_head(const std::string& url, const std::vector<std::string>& headers = {},
                   const std::atomic<bool>* cancel = nullptr);

struct HttpText {
  long status = 0;
  std::string body;
};

// A GET of a small answer (an API's JSON), redirects followed. Throws Error when no response
// comes or its body passes max_bytes; DownloadCancelled when `cancel` is set meanwhile.
HttpText http_get_text(const std::string& url, const std::vector<std::string>& headers = {},
                       const std::atomic<bool>* cancel = nullptr, size_t max_bytes = 8u << 20);

// "http://host:port" of a URL.
std::string origin_of(const std::string& url);

// "HTTP 401: ..." with what the status usually means for a download.
std::string describe_status(long status);

// `location` resolved against `base` (absolute, or an absolute path on base's host).
std::string resolve_location(const std::string& base, const std::string& location);

}  // namespace pagedchat::models
