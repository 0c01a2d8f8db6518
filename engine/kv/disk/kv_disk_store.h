#pragma once
// The disk tier under the KV pool: full blocks kept as files (kv_block_file.h) in a folder, so a
// chat whose blocks left memory (evicted, or the process ended) is read back instead of computed
// again. Keyed as the prefix cache is (a block's hash names its whole token prefix), inside a
// namespace that says what the bytes are valid for: the model file's identity, the KV element
// type, the block size and the backend's layout (one subfolder each). Several processes may share
// the folder: a file appears whole (written aside, then renamed) and a file another process
// removed is a miss.
//
// Reads may be synchronous (read) or queued (read_async: a reader thread of the store's own reads
// a chain of blocks while the engine steps its other sequences). Writes are queued and done by a
// thread of the store's own, off the engine's step loop; a full
// disk stops them (said once), and they start again a minute later. The folder is held under a
// size cap, least recently used blocks removed first (a block read back counts as used; the file's
// time carries that across restarts; a block's known ancestors count as used with it, so a chain
// loses its tail first, never its head). A block that cannot be read back as written (torn,
// corrupt, another chain) is removed and reported; the caller recomputes it.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/kv/disk/kv_block_file.h"

namespace pagedchat {

struct KvDiskConfig {
  std::string dir;         // empty: no disk tier
  uint64_t max_bytes = 0;  // the folder's cap; 0: a tenth of the free space there at open
};

struct KvDiskStats {
  int64_t num_files = 0;     // block files in the folder (every namespace), as this store counts them
  int64_t num_own_files = 0; // this store's namespace's (this model, layout and block size), queued writes included
  uint64_t bytes = 0;        // their bytes
  uint64_t max_bytes = 0;    // the cap
  int64_t num_written = 0;   // blocks this store wrote
  int64_t num_read = 0;      // blocks read back
  int64_t num_refused = 0;   // files found bad and removed (recomputed instead)
  int64_t num_dropped = 0;   // writes not done: the queue was full, or writing was stopped
  int64_t num_evicted = 0;   // files removed for the cap
  bool writing = true;       // false while stopped by a failed write (a full disk)
};

class KvDiskStore {
 public:
  // namespace_id: kv_disk_namespace(); payload_bytes: one block's K/V bytes. Creates the folder;
  // throws Error when it cannot. Removes files a killed writer left half-written.
  KvDiskStore(KvDiskConfig config, uint64_t namespace_id, size_t payload_bytes);
  ~KvDiskStore();  // writes what is queued, then stops
  KvDiskStore(const KvDiskStore&) = delete;
  KvDiskStore& operator=(const KvDiskStore&) = delete;

  const std::string& dir() const { return dir_; }
  std::string namespace_dir() const;  // this store's namespace's subfolder
  size_t payload_bytes() const { return payload_bytes_; }
  // Whether the block is on disk or queued (a write of it would be a duplicate).
  bool has(uint64_t hash) const;
  // Reads block `hash` (whose parent is parent_hash and whose tokens are `tokens`) into payload.
  // False when it is not there or not good (then removed, and said on stderr).
  bool read(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens, std::vector<uint8_t>& payload);
  // Queues a full block's write; false when not queued (queue full, writing stopped).
  bool write(uint64_t hash, uint64_t parent_hash, std::vector<int32_t> tokens, std::vector<uint8_t> payload);
  void flush();  // waits until the queue is written
  KvDiskStats stats() const;

  // Whether block `hash`'s file is there (written by any process): worth a read.
  bool exists(uint64_t hash) const;
  // Removes block `hash`'s file (a deleted chat's); false when there was none.
  bool remove(uint64_t hash);
  // The reader thread: a chain of blocks read in order, up to the first that is missing or bad.
  struct ReadBlock {
    uint64_t hash = 0, parent_hash = 0;
    std::vector<int32_t> tokens;
  };
  struct ReadResult {
    int64_t ticket = 0;
    std::vector<std::vector<uint8_t>> payloads;  // the chain's first blocks, those read
    double seconds = 0;                          // the reading's time
  };
  int64_t read_async(std::vector<ReadBlock> chain);  // a ticket
  std::vector<ReadResult> take_reads();              // the chains read since the last call
  void wait_reads(int timeout_ms);                   // until one is read, or the time is up

 private:
  struct Key {
    uint64_t ns = 0, hash = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.hash ^ (k.ns * 0x9e3779b97f4a7c15ull); }
  };
  struct Entry {
    uint64_t bytes = 0;
    std::list<Key>::iterator lru;
    uint64_t parent = 0;  // its parent block's hash, when known (written or read here; not from a scan)
  };
  struct Job {
    uint64_t hash = 0, parent_hash = 0;
    std::vector<int32_t> tokens;
    std::vector<uint8_t> payload;
  };

  std::string path_of(const Key& k) const;
  void scan();
  void writer_loop();
  void reader_loop();
  void write_one(const Job& job);
  // Under mu_: index a file as the most recently used, its known ancestors after it (a chain is
  // useless past a missing block, so its head must be the last of it to go), and remove the least
  // recently used past the cap.
  void add_locked(const Key& k, uint64_t bytes, uint64_t parent = 0);
  void remove_locked(const Key& k);
  void note(const std::string& line);

  std::string dir_;
  uint64_t namespace_id_;
  size_t payload_bytes_;
  uint64_t max_bytes_ = 0;

  mutable std::mutex mu_;
  std::condition_variable work_, idle_;
  std::unordered_map<Key, Entry, KeyHash> index_;
  std::list<Key> lru_;  // least recently used first
  uint64_t bytes_ = 0;
  int64_t num_own_ = 0;  // index_ entries in namespace_id_
  std::unordered_set<uint64_t> queued_;  // hashes in jobs_ or being written
  std::deque<Job> jobs_;
  uint64_t queued_bytes_ = 0;
  bool busy_ = false, stop_ = false;
  int64_t retry_at_ms_ = 0;  // writing stopped until then (0: writing)
  KvDiskStats counts_;
  struct ReadJob {
    int64_t ticket = 0;
    std::vector<ReadBlock> chain;
  };
  std::deque<ReadJob> read_jobs_;
  std::vector<ReadResult> read_results_;
  std::condition_variable read_work_, read_done_;
  int64_t next_ticket_ = 1;
  std::thread writer_, reader_;
};

// The namespace of a store: what a block's bytes are valid for. model_identity:
// model_file_identity(); layout: the backend's name for its block layout and element type.
uint64_t kv_disk_namespace(uint64_t model_identity, const std::string& layout, int32_t block_size, size_t payload_bytes);

}  // namespace pagedchat
