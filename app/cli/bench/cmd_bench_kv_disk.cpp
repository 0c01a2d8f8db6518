// `bench kv-disk`: a long chat restored from the disk tier against computing its prompt again.
// Per context length: a prompt of that many tokens answered by an engine with a disk folder (its
// time to first token is the re-prefill), the engine ended (its blocks written), the files put
// out of the page cache (flushed, then POSIX_FADV_DONTNEED: the read is from the disk, as after
// a reboot), then the same prompt on a fresh engine over the same folder (its time to first token
// is the restore). Beside them, the folder read back with plain read()s: the disk's bandwidth.
// The first token must be the same in both runs. "said s" is what the restore's reply says it
// saved (Engine::prompt_seconds from the rate the first engine measured and left in the folder):
// beside the measured re-prefill it shows how close that estimate is.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "app/cli/backend_choice.h"
#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"
#include "engine/model/model.h"

namespace pagedchat::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Answer {
  double seconds = 0;  // submit to first token
  int32_t token = -1;
  double said_saved = 0;  // the request's disk_prompt_seconds
  EngineStats stats;
};

Answer first_token(const Model& model, Backend& backend, EngineConfig config, const std::vector<int32_t>& prompt) {
  const auto t0 = Clock::now();
  Engine engine(model, backend, config);
  RequestTracker tracker(engine);
  Request r;
  r.prompt = prompt;
  r.params.temperature = 0.0f;
  r.params.max_tokens = 1;
  r.params.ignore_eos = true;
  const RequestId id = engine.submit(r);
  tracker.track(id, 1);
  while (engine.step()) {}
  Answer a;
  a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  RequestOutput out = tracker.take_output(id);
  if (!out.ok()) fail("%s", out.error.c_str());
  a.token = out.samples[0].tokens.at(0);
  a.said_saved = out.disk_prompt_seconds;
  a.stats = engine.stats();
  return a;  // the engine ends here: its queued writes are done
}

std::vector<fs::path> block_files(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".kvb") files.push_back(e.path());
  return files;
}

// Written to the disk, then out of the page cache.
void drop_from_cache(const std::vector<fs::path>& files) {
  for (const fs::path& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// MB/s of reading the files whole, from the disk.
double read_bandwidth(const std::vector<fs::path>& files) {
  drop_from_cache(files);
  std::vector<char> buf(1 << 20);
  uint64_t bytes = 0;
  const auto t0 = Clock::now();
  for (const fs::path& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) continue;
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) bytes += static_cast<uint64_t>(n);
    ::close(fd);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return s > 0 ? bytes / s / 1e6 : 0;
}

}  // namespace

int cmd_bench_kv_disk(const std::vector<std::string>& argv) {
  Args args(argv, with_backend_options({"threads", "context", "dir", "block-size"}), {"json"});
  auto model = load_model(args);
  const int threads = args.get_int("threads", 2, 1, 1024);
  const std::vector<int> contexts = args.get_int_list("context", "2000,8000", 1 << 20);
  const std::string base = args.get_or("dir", (fs::temp_directory_path() / "pagedchat-bench-kv-disk").string());
  const bool json = args.flag("json");
  EngineConfig ec;
  ec.block_size = args.get_block_size();
  BuiltBackend choice = make_backend(args, *model, threads, ec.max_batched_tokens, ec.block_size);
  if (!json)
    std::printf("model %s, %s, block size %d, folder %s\n%8s %14s %14s %8s %12s %12s %8s\n", model->config().name.c_str(),
                choice.description.c_str(), ec.block_size, base.c_str(), "context", "re-prefill s", "from disk s", "ratio",
                "MiB read", "disk MB/s", "said s");
  std::mt19937_64 rng(7);
  for (int n : contexts) {
    if (n + 1 > model->config().context_length) fail("--context %d is past the model's %d tokens", n, model->config().context_length);
    std::vector<int32_t> prompt(static_cast<size_t>(n));
    std::uniform_int_distribution<int32_t> pick(100, model->config().vocab_size - 1);
    for (int32_t& t : prompt) t = pick(rng);
    const std::string dir = base + "/ctx" + std::to_string(n);
    fs::remove_all(dir);
    ec.max_context = n + ec.block_size;
    ec.num_blocks = (ec.max_context + ec.block_size - 1) / ec.block_size;
    ec.kv_disk.dir = dir;
    ec.kv_disk.max_bytes = 64ull << 30;
    const Answer computed = first_token(*model, *choice.backend, ec, prompt);
    const std::vector<fs::path> files = block_files(dir);
    drop_from_cache(files);
    const Answer restored = first_token(*model, *choice.backend, ec, prompt);
    if (restored.token != computed.token) fail("the restored prompt's first token differs (%d, computed %d)", restored.token, computed.token);
    const double mib = restored.stats.disk.num_read * static_cast<double>(choice.backend->kv_block_bytes(ec.block_size)) / (1 << 20);
    const double bandwidth = read_bandwidth(files);
    if (json)
      std::printf("{\"bench\":\"kv-disk\",\"context\":%d,\"reprefill_s\":%.3f,\"restore_s\":%.3f,\"ratio\":%.1f,\"blocks_read\":%lld,"
                  "\"mib_read\":%.1f,\"disk_mb_s\":%.0f,\"said_saved_s\":%.3f}\n",
                  n, computed.seconds, restored.seconds, computed.seconds / restored.seconds,
                  static_cast<long long>(restored.stats.disk.num_read), mib, bandwidth, restored.said_saved);
    else
      std::printf("%8d %14.2f %14.2f %7.1fx %12.1f %12.0f %8.2f\n", n, computed.seconds, restored.seconds,
                  computed.seconds / restored.seconds, mib, bandwidth, restored.said_saved);
    fs::remove_all(dir);
  }
  return 0;
}

}  // namespace pagedchat::cli
