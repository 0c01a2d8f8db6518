// A resumable, verified file download on libcurl (see http_download.h).
#include "models/http_download.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/common/ascii_text.h"
#include "models/model_summary.h"
#include "models/sha256.h"

namespace fs = std::filesystem;

namespace pagedchat::models {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlHandle {
  CURL* h;
  curl_slist* headers = nullptr;
  CurlHandle() : h((global_init(), curl_easy_init())) {
    if (!h) fail("could not start an HTTP client (curl_easy_init)");
  }
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
  }
  void set_headers(const std::vector<std::string>& lines) {
    for (const auto& l : lines) headers = curl_slist_append(headers, l.c_str());
    if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  }
};

// Collects a response's status and headers; a redirect's headers are dropped when the next
// response starts (its status line), so what remains is the final response's.
struct HeaderSink {
  long status = 0;
  std::map<std::string, std::string> headers;
  static size_t on_header(char* data, size_t size, size_t count, void* self) {
    auto* sink = static_cast<HeaderSink*>(self);
    std::string line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
      sink->headers.clear();
      const size_t sp = line.find(' ');
      sink->status = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
    } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
      sink->headers[ascii_lower(trim_space(line.substr(0, colon)))] = trim_space(line.substr(colon + 1));
    }
    return size * count;
  }
};

// One connection's worth of a download: appends to the open .part file and hashes as it goes.
struct Transfer {
  std::FILE* out = nullptr;
  Sha256* hash = nullptr;
  uint64_t offset = 0;      // bytes in the .part before this connection
  uint64_t written = 0;     // bytes this connection added
  uint64_t total = 0;       // the whole file's size, once known
  bool accepted = false;    // the response was checked and its body is the file's bytes
  bool restart = false;     // the server ignored our Range: start the file over
  std::string refusal;      // why the body was refused (status, space)
  HeaderSink head;
  const DownloadRequest* request = nullptr;
  std::string directory;

  // The first body bytes: decide from the status whether they continue the .part.
  bool accept(CURL* h) {
    if (head.status == 206) {
      // Content-Range: bytes START-END/TOTAL
      const std::string range = head.headers.count("content-range") ? head.headers["content-range"] : "";
      unsigned long long start = 0, end = 0, whole = 0;
      if (std::sscanf(range.c_str(), "bytes %llu-%llu/%llu", &start, &end, &whole) != 3 || start != offset) {
        restart = true;  // not the bytes after ours: what the .part holds cannot be trusted to continue
        return false;
      }
      total = whole;
    } else if (head.status == 200) {
      if (offset > 0) restart = true;  // a full body: what the .part holds is replaced
      curl_off_t length = -1;
      curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
      total = length > 0 ? static_cast<uint64_t>(length) : 0;
      if (restart) return false;
    } else {
      refusal = format("the server answered HTTP %ld", head.status);
      return false;
    }
    if (request->expected_size && total && total != request->expected_size) {
      refusal = format("the server offers %llu bytes where %llu were expected", (unsigned long long)total,
                       (unsigned long long)request->expected_size);
      return false;
    }
    if (!total) total = request->expected_size;
    if (total && total > offset) {
      try {
        check_space(directory, total - offset);
      } catch (const Error& e) {
        refusal = e.what();
        return false;
      }
    }
    return true;
  }

  static size_t on_body(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const size_t n = size * count;
    if (!t->accepted) {
      if (t->head.status != 200 && t->head.status != 206) return n;  // an error page: read and drop
      if (!t->accept(t->curl)) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
      t->accepted = true;
    }
    if (std::fwrite(data, 1, n, t->out) != n) {
      t->refusal = "could not write the downloaded bytes (disk full?)";
      return 0;
    }
    t->hash->update(data, n);
    t->written += n;
    return n;
  }

  static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(self);
    if (t->request->cancel && t->request->cancel->load()) return 1;  // aborts (CURLE_ABORTED_BY_CALLBACK)
    if (t->request->on_progress && t->accepted) t->request->on_progress({t->offset + t->written, t->total});
    return 0;
  }

  CURL* curl = nullptr;
};

// Errors worth another connection: the network, not the server's answer.
bool transient(CURLcode code) {
  switch (code) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_COULDNT_CONNECT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

}  // namespace

void check_space(const std::string& directory, uint64_t bytes) {
  std::error_code ec;
  const fs::space_info space = fs::space(directory, ec);
  if (!ec && space.available < bytes)
    fail("not enough disk space in %s: %s needed, %s free", directory.c_str(), format_bytes(bytes).c_str(),
         format_bytes(space.available).c_str());
}

std::string describe_status(long status) {
  switch (status) {
    case 401: return "HTTP 401: the server wants a token (for Hugging Face: set HF_TOKEN)";
    case 403: return "HTTP 403: access denied (a gated repository needs its terms accepted and HF_TOKEN set)";
    case 404: return "HTTP 404: not found";
    case 429: return "HTTP 429: too many requests; try again later";
    default: return format("HTTP %ld", status);
  }
}

std::string origin_of(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t host_end = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return host_end == std::string::npos ? url : url.substr(0, host_end);
}

std::string resolve_location(const std::string& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  const std::string origin = origin_of(base);
  if (!location.empty() && location[0] == '/') return origin + location;
  const size_t last = base.rfind('/');
  return (last == std::string::npos || last < origin.size() ? origin + "/" : base.substr(0, last + 1)) + location;
}

namespace {

// A small request (a HEAD, an API's answer): the URL, a cancel flag checked as it runs, the
// timeouts and headers every such request has.
void prepare_small_request(CurlHandle& c, const std::string& url, const std::vector<std::string>& headers,
                           const std::atomic<bool>* cancel) {
  if (cancel) {
    curl_easy_setopt(c.h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c.h, CURLOPT_XFERINFOFUNCTION, +[](void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
      return static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0;
    });
    curl_easy_setopt(c.h, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel));
  }
  curl_easy_setopt(c.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.h, CURLOPT_CONNECTTIMEOUT, 20L);
  curl_easy_setopt(c.h, CURLOPT_TIMEOUT, 60L);
  curl_easy_setopt(c.h, CURLOPT_USERAGENT, "pagedchat/0.1");
  c.set_headers(headers);
}

// Runs it; throws when it was cancelled or no answer came.
void perform_small_request(CurlHandle& c, const std::string& url) {
  const CURLcode rc = curl_easy_perform(c.h);
  if (rc == CURLE_ABORTED_BY_CALLBACK) throw DownloadCancelled();
  if (rc != CURLE_OK) fail("cannot reach %s: %s", url.c_str(), curl_easy_strerror(rc));
}

}  // namespace

HttpHead http_head(const std::string& url, const std::vector<std::string>& headers, const std::atomic<bool>* cancel) {
  CurlHandle c;
  HeaderSink sink;
  prepare_small_request(c, url, headers, cancel);
  curl_easy_setopt(c.h, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(c.h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c.h, CURLOPT_HEADERFUNCTION, &HeaderSink::on_header);
  curl_easy_setopt(c.h, CURLOPT_HEADERDATA, &sink);
  perform_small_request(c, url);
  return {sink.status, sink.headers};
}

HttpText http_get_text(const std::string& url, const std::vector<std::string>& headers, const std::atomic<bool>* cancel,
                       size_t max_bytes) {
  struct Sink {
    std::string body;
    size_t max_bytes;
    bool too_large = false;
    static size_t on_body(char* data, size_t size, size_t count, void* self) {
      auto* s = static_cast<Sink*>(self);
      const size_t n = size * count;
      if (s->body.size() + n > s->max_bytes) {
        s->too_large = true;
        return 0;  // aborts (CURLE_WRITE_ERROR)
      }
      s->body.append(data, n);
      return n;
    }
  } sink{{}, max_bytes};
  CurlHandle c;
  prepare_small_request(c, url, headers, cancel);
  curl_easy_setopt(c.h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, &Sink::on_body);
  curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &sink);
  try {
    perform_small_request(c, url);
  } catch (const DownloadCancelled&) {
    throw;
  } catch (const Error&) {
    if (sink.too_large) fail("the answer from %s is larger than %zu bytes", url.c_str(), max_bytes);
    throw;
  }
  long status = 0;
  curl_easy_getinfo(c.h, CURLINFO_RESPONSE_CODE, &status);
  return {status, std::move(sink.body)};
}

namespace {

// A .part from an earlier run: its bytes are hashed again, so that only the rest is asked for.
// Returns how many bytes it holds (0: none, or a .part larger than the file, removed).
uint64_t resume_partial(const std::string& part, const DownloadRequest& request, Sha256& hash) {
  std::error_code ec;
  if (!fs::is_regular_file(part, ec)) return 0;
  uint64_t have = fs::file_size(part, ec);
  if (request.expected_size && have > request.expected_size) {
    fs::remove(part, ec);
    return 0;
  }
  if (have > 0 && !hash.update_from_file(part, request.cancel)) throw DownloadCancelled();
  return have;
}

// One connection: the bytes from `have` on (a Range request when have > 0) appended to t.out.
CURLcode transfer_once(CurlHandle& c, Transfer& t, const DownloadRequest& request, uint64_t have) {
  t.curl = c.h;
  curl_easy_setopt(c.h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c.h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c.h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c.h, CURLOPT_HEADERFUNCTION, &HeaderSink::on_header);
  curl_easy_setopt(c.h, CURLOPT_HEADERDATA, &t.head);
  curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
  curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c.h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c.h, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
  curl_easy_setopt(c.h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c.h, CURLOPT_CONNECTTIMEOUT, 20L);
  curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c.h, CURLOPT_LOW_SPEED_TIME, request.stall_seconds);
  curl_easy_setopt(c.h, CURLOPT_USERAGENT, "pagedchat/0.1");
  std::vector<std::string> headers = request.headers;
  if (have) headers.push_back("Range: bytes=" + std::to_string(have) + "-");
  c.set_headers(headers);
  return curl_easy_perform(c.h);
}

// The destination's folder, made when it is not there.
std::string destination_folder(const std::string& destination) {
  const fs::path dest(destination);
  const std::string directory = dest.has_parent_path() ? dest.parent_path().string() : ".";
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) fail("cannot create the folder %s: %s", directory.c_str(), ec.message().c_str());
  return directory;
}

// A 416 to a Range request: whether its Content-Range says the file is `have` bytes long.
bool range_is_whole(HeaderSink& head, uint64_t have) {
  const std::string cr = head.headers.count("content-range") ? head.headers["content-range"] : "";
  unsigned long long whole = 0;
  return std::sscanf(cr.c_str(), "bytes */%llu", &whole) == 1 && whole == have;
}

// The whole .part checked (what is on disk is what was counted, the size and sha256 as
// published), then renamed to the destination; a .part that fails a check is deleted.
DownloadResult finish_download(const std::string& part, const DownloadRequest& request, uint64_t have, Sha256& hash) {
  DownloadResult result;
  result.path = request.destination;
  std::error_code ec;
  if (fs::file_size(part, ec) != have || ec) {  // a write that failed unseen would make it shorter
    fs::remove(part, ec);
    fail("%s holds fewer bytes than were downloaded (disk full?); it was deleted", part.c_str());
  }
  result.bytes = have;
  result.sha256 = hash.hex();
  if (request.expected_size && have != request.expected_size) {
    fs::remove(part, ec);
    fail("downloaded %llu bytes where %llu were expected", (unsigned long long)have,
         (unsigned long long)request.expected_size);
  }
  if (!request.expected_sha256.empty() && ascii_lower(request.expected_sha256) != result.sha256) {
    fs::remove(part, ec);
    fail("the download's sha256 is %s, not the published %s; the file was deleted", result.sha256.c_str(),
         request.expected_sha256.c_str());
  }
  fs::rename(part, request.destination, ec);
  if (ec) fail("cannot rename %s: %s", part.c_str(), ec.message().c_str());
  return result;
}

}  // namespace

DownloadResult download_file(const DownloadRequest& request) {
  const std::string directory = destination_folder(request.destination);
  std::error_code ec;
  const std::string part = partial_path(request.destination, request.expected_sha256);
  Sha256 hash;
  uint64_t have = resume_partial(part, request, hash);

  // The size is known before the first byte (the hub's X-Linked-Size, a pinned wheel): a disk
  // too small is said now, not after filling it.
  if (request.expected_size > have) check_space(directory, request.expected_size - have);

  std::string last_error;
  uint64_t total = request.expected_size;
  for (int attempt = 1; attempt <= request.max_attempts; ++attempt) {
    if (request.cancel && request.cancel->load()) throw DownloadCancelled();
    if (total && have == total) break;  // the .part is already whole
    std::FILE* out = std::fopen(part.c_str(), have ? "ab" : "wb");
    if (!out) fail("cannot write %s", part.c_str());
    Transfer t;
    t.out = out;
    t.hash = &hash;
    t.offset = have;
    t.request = &request;
    t.directory = directory;
    CurlHandle c;
    const CURLcode rc = transfer_once(c, t, request, have);
    // The last buffered bytes are written here: a full disk shows now, not as a short file.
    if (std::fclose(out) != 0 && t.refusal.empty()) t.refusal = "could not write the downloaded bytes (disk full?)";
    have += t.written;
    if (t.total) total = t.total;

    if (rc == CURLE_ABORTED_BY_CALLBACK) throw DownloadCancelled();
    if (t.head.status == 416 && have > 0) {
      // Nothing past what we have: the .part is whole if its size is the file's, else stale.
      if (range_is_whole(t.head, have)) {
        total = have;
        break;
      }
      t.restart = true;
    }
    if (t.restart) {  // the whole file, another range, or a stale .part: start over from byte 0
      fs::remove(part, ec);
      hash = Sha256();
      have = 0;
      continue;
    }
    if (!t.refusal.empty()) {
      if (have == 0) fs::remove(part, ec);  // nothing of the file: leave nothing behind
      fail("downloading %s failed: %s", request.url.c_str(), t.refusal.c_str());
    }
    if (rc == CURLE_OK && t.head.status >= 400) {
      // A busy or failing server may answer the next connection; anything else is final.
      const bool retry = t.head.status == 429 || t.head.status >= 500;
      last_error = format("HTTP %ld", t.head.status);
      if (!retry) fail("downloading %s failed: %s", request.url.c_str(), describe_status(t.head.status).c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
      continue;
    }
    if (rc == CURLE_OK) {
      if (total && have < total) {  // closed early without an error: resume
        last_error = "the connection closed early";
        continue;
      }
      total = have;
      break;
    }
    last_error = curl_easy_strerror(rc);
    if (!transient(rc)) fail("downloading %s failed: %s", request.url.c_str(), last_error.c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
  }
  if (!total || have != total)
    fail("downloading %s failed after %d connections: %s", request.url.c_str(), request.max_attempts,
         last_error.empty() ? "incomplete" : last_error.c_str());

  DownloadResult result = finish_download(part, request, have, hash);
  if (request.on_progress) request.on_progress({have, have});
  return result;
}

}  // namespace pagedchat::models
