#include "engine/kv/disk/kv_disk_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "engine/common/error.h"
#include "engine/kv/block_hash.h"
#include "engine/kv/disk/disk_files.h"

namespace fs = std::filesystem;

namespace pagedchat {
namespace {

// Queued writes past this many bytes are dropped (a disk slower than the engine fills no memory).
constexpr uint64_t kMaxQueuedBytes = 64ull << 20;
// After a failed write (a full disk), writing rests this long before it tries again.
constexpr int64_t kRetryAfterMs = 60'000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hex16(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016" PRIx64, v);
  return s;
}

bool parse_hex16(const std::string& s, uint64_t* v) {
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
  *v = std::strtoull(s.c_str(), nullptr, 16);
  return true;
}

}  // namespace

uint64_t kv_disk_namespace(uint64_t model_identity, const std::string& layout, int32_t block_size, size_t payload_bytes) {
  uint64_t h = mix64(model_identity ^ 0x4b564469736b31ull);  // "KVDisk1": a format change starts afresh
  for (unsigned char c : layout) h = mix64(h ^ c);
  h = mix64(h ^ static_cast<uint64_t>(block_size));
  return mix64(h ^ static_cast<uint64_t>(payload_bytes));
}

KvDiskStore::KvDiskStore(KvDiskConfig config, uint64_t namespace_id, size_t payload_bytes)
    : dir_(std::move(config.dir)), namespace_id_(namespace_id), payload_bytes_(payload_bytes) {
  std::error_code ec;
  fs::create_directories(fs::path(dir_) / hex16(namespace_id_), ec);
  if (ec) fail("cannot make the KV disk folder %s: %s", dir_.c_str(), ec.message().c_str());
  max_bytes_ = config.max_bytes;
  if (max_bytes_ == 0) {
    struct statvfs vfs{};
    const uint64_t free_bytes = ::statvfs(dir_.c_str(), &vfs) == 0 ? static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize : 0;
    max_bytes_ = std::max<uint64_t>(free_bytes / 10, 64ull << 20);
  }
  counts_.max_bytes = max_bytes_;
  scan();
  writer_ = std::thread([this] { writer_loop(); });
  reader_ = std::thread([this] { reader_loop(); });
}

KvDiskStore::~KvDiskStore() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  read_work_.notify_all();
  writer_.join();
  reader_.join();
}

std::string KvDiskStore::namespace_dir() const { return dir_ + "/" + hex16(namespace_id_); }

std::string KvDiskStore::path_of(const Key& k) const { return dir_ + "/" + hex16(k.ns) + "/" + hex16(k.hash) + ".kvb"; }

// Every namespace's files, oldest first (their times say when they were last written or read);
// a dead writer's temporary files are removed.
void KvDiskStore::scan() {
  struct Found {
    fs::file_time_type time;
    Key key;
    uint64_t bytes;
  };
  std::vector<Found> found;
  std::error_code ec;
  try {  // a folder changed under the walk (another process): what was seen is indexed
    for (const fs::directory_entry& sub : fs::directory_iterator(dir_, ec)) {
      uint64_t ns = 0;
      if (!sub.is_directory(ec) || !parse_hex16(sub.path().filename().string(), &ns)) continue;
      for (const fs::directory_entry& f : fs::directory_iterator(sub.path(), ec)) {
        const std::string name = f.path().filename().string();
        if (name.ends_with(".tmp")) {
          if (writer_is_dead(name)) fs::remove(f.path(), ec);
          continue;
        }
        uint64_t hash = 0;
        if (!name.ends_with(".kvb") || !parse_hex16(name.substr(0, name.size() - 4), &hash)) continue;
        const uint64_t bytes = f.file_size(ec);
        if (ec) continue;
        found.push_back({f.last_write_time(ec), {ns, hash}, bytes});
      }
    }
  } catch (const fs::filesystem_error&) {
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.time < b.time; });
  std::lock_guard lock(mu_);
  for (const Found& f : found) add_locked(f.key, f.bytes);
}

void KvDiskStore::add_locked(const Key& k, uint64_t bytes, uint64_t parent) {
  if (auto it = index_.find(k); it != index_.end()) {
    if (parent == 0) parent = it->second.parent;
    remove_locked(k);
  }
  lru_.push_back(k);
  index_[k] = {bytes, std::prev(lru_.end()), parent};
  bytes_ += bytes;
  num_own_ += k.ns == namespace_id_;
  // Its ancestors after it, nearest first: the chain's head ends the newest. Bounded (1,024
  // blocks: 16k tokens of 16-token blocks), as a chain read block by block walks it each time,
  // and a hash collision could make a cycle.
  uint64_t p = parent;
  for (int depth = 0; p != 0 && depth < 1024; ++depth) {
    auto it = index_.find({k.ns, p});
    if (it == index_.end()) break;
    lru_.splice(lru_.end(), lru_, it->second.lru);
    p = it->second.parent;
  }
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    const Key old = lru_.front();
    std::error_code ec;
    fs::remove(path_of(old), ec);
    remove_locked(old);
    ++counts_.num_evicted;
  }
}

void KvDiskStore::remove_locked(const Key& k) {
  auto it = index_.find(k);
  if (it == index_.end()) return;
  bytes_ -= it->second.bytes;
  num_own_ -= k.ns == namespace_id_;
  lru_.erase(it->second.lru);
  index_.erase(it);
}

void KvDiskStore::note(const std::string& line) { std::fprintf(stderr, "pagedchat: KV disk tier (%s): %s\n", dir_.c_str(), line.c_str()); }

bool KvDiskStore::has(uint64_t hash) const {
  std::lock_guard lock(mu_);
  return index_.contains({namespace_id_, hash}) || queued_.contains(hash);
}

bool KvDiskStore::read(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens, std::vector<uint8_t>& payload) {
  const Key k{namespace_id_, hash};
  const std::string path = path_of(k);
  std::vector<uint8_t> file;
  // Tried even when not indexed: another process may have written it.
  const FileRead got = read_file(path, file, kv_block_file_bytes(tokens.size(), payload_bytes_));
  if (got != FileRead::ok) {
    std::lock_guard lock(mu_);
    if (got == FileRead::bad) {
      ::unlink(path.c_str());
      ++counts_.num_refused;
      note("block " + hex16(hash) + " is not a block file of the right length: removed, its tokens are computed again");
    }
    remove_locked(k);  // gone (another process removed it) or bad
    return false;
  }
  const std::string why = decode_kv_block(file, {namespace_id_, hash, parent_hash}, tokens, payload, payload_bytes_);
  std::lock_guard lock(mu_);
  if (!why.empty()) {
    // Another chain under the same hash is a collision, not damage: the file stays.
    if (why != "another block of the chain" && why != "holds other tokens") {
      ::unlink(path.c_str());
      remove_locked(k);
      ++counts_.num_refused;
      note("block " + hex16(hash) + " " + why + ": removed, its tokens are computed again");
    }
    return false;
  }
  // Read: most recently used, also for the next start; indexed only while the file is still there
  // (the writer may have removed it for the cap meanwhile: the bytes read are good all the same).
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) add_locked(k, file.size(), parent_hash);
  else remove_locked(k);
  ++counts_.num_read;
  return true;
}

bool KvDiskStore::write(uint64_t hash, uint64_t parent_hash, std::vector<int32_t> tokens, std::vector<uint8_t> payload) {
  {
    std::lock_guard lock(mu_);
    if (retry_at_ms_ != 0 && now_ms() < retry_at_ms_) {
      ++counts_.num_dropped;
      return false;
    }
    if (queued_bytes_ + payload.size() > kMaxQueuedBytes || queued_.contains(hash)) {
      counts_.num_dropped += !queued_.contains(hash);
      return false;
    }
    queued_.insert(hash);
    queued_bytes_ += payload.size();
    jobs_.push_back({hash, parent_hash, std::move(tokens), std::move(payload)});
  }
  work_.notify_one();
  return true;
}

void KvDiskStore::flush() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

KvDiskStats KvDiskStore::stats() const {
  std::lock_guard lock(mu_);
  KvDiskStats s = counts_;
  s.num_files = static_cast<int64_t>(index_.size());
  // Queued writes count: has() answers for them, and the pool view lists them.
  s.num_own_files = num_own_ + static_cast<int64_t>(queued_.size());
  s.bytes = bytes_;
  s.writing = retry_at_ms_ == 0;
  return s;
}

bool KvDiskStore::remove(uint64_t hash) {
  const Key k{namespace_id_, hash};
  std::lock_guard lock(mu_);
  // A write still queued goes too (one being written lands after: the cap removes it in time).
  for (auto it = jobs_.begin(); it != jobs_.end();)
    if (it->hash == hash) {
      queued_bytes_ -= it->payload.size();
      queued_.erase(hash);
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  const bool removed = ::unlink(path_of(k).c_str()) == 0;
  remove_locked(k);
  return removed;
}

bool KvDiskStore::exists(uint64_t hash) const { return ::access(path_of({namespace_id_, hash}).c_str(), F_OK) == 0; }

int64_t KvDiskStore::read_async(std::vector<ReadBlock> chain) {
  int64_t ticket;
  {
    std::lock_guard lock(mu_);
    ticket = next_ticket_++;
    read_jobs_.push_back({ticket, std::move(chain)});
  }
  read_work_.notify_one();
  return ticket;
}

std::vector<KvDiskStore::ReadResult> KvDiskStore::take_reads() {
  std::lock_guard lock(mu_);
  return std::exchange(read_results_, {});
}

void KvDiskStore::wait_reads(int timeout_ms) {
  std::unique_lock lock(mu_);
  read_done_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !read_results_.empty(); });
}

void KvDiskStore::reader_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    read_work_.wait(lock, [this] { return stop_ || !read_jobs_.empty(); });
    if (stop_) return;  // reads nobody will take
    ReadJob job = std::move(read_jobs_.front());
    read_jobs_.pop_front();
    lock.unlock();
    ReadResult r;
    r.ticket = job.ticket;
    const auto t0 = std::chrono::steady_clock::now();
    for (const ReadBlock& b : job.chain) {
      std::vector<uint8_t> payload;
      if (!read(b.hash, b.parent_hash, b.tokens, payload)) break;
      r.payloads.push_back(std::move(payload));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    read_results_.push_back(std::move(r));
    read_done_.notify_all();
  }
}

void KvDiskStore::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, all written
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    write_one(job);
    lock.lock();
    busy_ = false;
    queued_.erase(job.hash);
    queued_bytes_ -= job.payload.size();
    if (jobs_.empty()) idle_.notify_all();
  }
}

void KvDiskStore::write_one(const Job& job) {
  {
    std::lock_guard lock(mu_);
    if (retry_at_ms_ != 0 && now_ms() < retry_at_ms_) {
      ++counts_.num_dropped;
      return;
    }
  }
  const Key k{namespace_id_, job.hash};
  const std::vector<uint8_t> file = encode_kv_block({namespace_id_, job.hash, job.parent_hash}, job.tokens, job.payload);
  static std::atomic<uint64_t> serial{0};
  const std::string final_path = path_of(k);
  const std::string tmp = dir_ + "/" + hex16(k.ns) + "/" + hex16(k.hash) + "." + std::to_string(::getpid()) + "." +
                          std::to_string(++serial) + ".tmp";
  int err = write_file(tmp, file);
  if (err == 0 && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
  }
  std::lock_guard lock(mu_);
  if (err != 0) {
    ++counts_.num_dropped;
    const bool was_writing = retry_at_ms_ == 0;
    retry_at_ms_ = now_ms() + kRetryAfterMs;
    if (was_writing) {
      note(std::string(err == ENOSPC || err == EDQUOT || err == EFBIG ? "the disk is full" : std::strerror(err)) +
           ": writing blocks stopped; tried again in a minute");
    }
    return;
  }
  if (retry_at_ms_ != 0) note("writing blocks again");
  retry_at_ms_ = 0;
  ++counts_.num_written;
  queued_.erase(job.hash);  // under the same lock as the index takes it: never counted twice
  add_locked(k, file.size(), job.parent_hash);
}

}  // namespace pagedchat
