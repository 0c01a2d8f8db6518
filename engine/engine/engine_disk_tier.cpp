// The engine's side of the disk tier (engine/kv/disk): the blocks each forward pass fills are
// queued to disk, and a waiting prompt whose blocks are on disk has them read and staged before
// the schedule, so that its start takes them as a prefix hit (a from_disk transfer each) instead
// of computing them. See docs/DESIGN.md, "KV memory".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_set>

#include "engine/common/error.h"
#include "engine/engine/engine.h"
#include "engine/engine/engine_live.h"
#include "engine/kv/disk/kv_disk_ledger.h"
#include "engine/model/model_identity.h"

namespace pagedchat {
namespace {
// Bytes of blocks read from disk and not yet in the pool, at most: a restored chat of 8,000
// tokens of a 1B model (32 KiB a token in f16) takes 256 MiB.
constexpr size_t kMaxStagedBytes = 1ull << 30;
}  // namespace

void Engine::open_disk_tier() {
  if (config_.kv_disk.dir.empty()) return;
  const std::string layout = backend_.kv_layout();
  if (layout.empty()) {
    std::fprintf(stderr, "pagedchat: the %.*s backend keeps no KV blocks on disk; running without the disk tier\n",
                 static_cast<int>(backend_.name().size()), backend_.name().data());
    return;
  }
  const size_t payload = backend_.kv_block_bytes(config_.block_size);
  const uint64_t ns = kv_disk_namespace(model_file_identity(model_.weights), layout, config_.block_size, payload);
  try {
    disk_ = std::make_unique<KvDiskStore>(config_.kv_disk, ns, payload);
  } catch (const std::exception& e) {  // a folder that cannot be made or read: the engine runs, without the tier
    std::fprintf(stderr, "pagedchat: %s; running without the disk tier\n", e.what());
    return;
  }
  kv_.track_sealed(true);
  const std::string& path = model_.weights.file.path();
  if (!path.empty() && kv_disk_record_model(config_.kv_disk.dir, path, model_file_identity(model_.weights)))
    std::fprintf(stderr,
                 "pagedchat: KV disk tier (%s): %s is not the file whose blocks were written there before (it was "
                 "replaced or changed): those blocks are not read, its chats' prompts are computed again, and the "
                 "old blocks leave under the size cap\n",
                 config_.kv_disk.dir.c_str(), path.c_str());
  prompt_rate_.seed(kv_disk_load_prompt_rate(disk_->namespace_dir()));
}

void Engine::save_prompt_rate() {
  if (disk_) kv_disk_save_prompt_rate(disk_->namespace_dir(), prompt_rate_.flops_per_second());
}

// Asynchronous: a waiting prompt whose next block past the pool is on disk has its chain read
// by the store's reader thread, and is not admitted meanwhile (SchedSequence::disk_wait); the
// others step on. Once read, the blocks are staged and the next schedule admits it on them. A
// prompt whose chain starts where another's read is under way waits for that one.
void Engine::stage_from_disk() {
  if (!disk_) return;
  drop_stale_staging();
  take_disk_reads();
  const size_t payload = disk_->payload_bytes();
  const size_t cap = std::min(kMaxStagedBytes, static_cast<size_t>(kv_.num_blocks()) * payload);
  const size_t bs = static_cast<size_t>(config_.block_size);
  bool runnable = scheduler_.num_running() > 0;
  for (SchedSequence* seq : scheduler_.waiting()) {
    if (seq->held || seq->disk_wait) continue;
    const size_t used = staged_bytes_ + inflight_bytes_;
    if (disk_looked_up_.contains(seq->id) || used + payload > cap) {
      runnable = true;
      continue;
    }
    const auto max_blocks = static_cast<int32_t>((cap - used) / payload);
    std::vector<KvManager::ChainBlock> chain = kv_.chain_past_hits(seq->tokens, seq->cache_salt, max_blocks);
    if (!chain.empty()) {
      if (auto f = read_followers_.find(chain.front().hash); f != read_followers_.end()) {
        f->second.push_back(seq->id);  // looked up again once that read is staged
        seq->disk_wait = true;
        continue;
      }
    }
    disk_looked_up_.insert(seq->id);
    if (chain.empty() || !disk_->exists(chain.front().hash)) {
      runnable = true;
      continue;
    }
    std::vector<KvDiskStore::ReadBlock> blocks;
    for (const KvManager::ChainBlock& b : chain) {
      blocks.push_back({b.hash, b.parent_hash, std::vector<int32_t>(seq->tokens.begin() + b.first_token,
                                                                    seq->tokens.begin() + b.first_token + static_cast<ptrdiff_t>(bs))});
    }
    const size_t reserved = chain.size() * payload;
    inflight_bytes_ += reserved;
    read_followers_[chain.front().hash];
    pending_reads_[disk_->read_async(std::move(blocks))] = {seq->id, std::move(chain), reserved};
    seq->disk_wait = true;
  }
  // Nothing else to run: wait for the disk a moment rather than step an empty batch at once.
  if (!runnable && !pending_reads_.empty()) {
    disk_->wait_reads(20);
    take_disk_reads();
  }
}

void Engine::take_disk_reads() {
  for (KvDiskStore::ReadResult& r : disk_->take_reads()) {
    auto it = pending_reads_.find(r.ticket);
    if (it == pending_reads_.end()) continue;
    const PendingRead read = std::move(it->second);
    pending_reads_.erase(it);
    inflight_bytes_ -= read.reserved;
    auto waiting = [&](SequenceId id) -> SchedSequence* {
      for (SchedSequence* w : scheduler_.waiting())
        if (w->id == id) return w;
      return nullptr;  // it left the queue meanwhile (aborted)
    };
    // Those that waited for this read look their prompts up again: through what it staged.
    if (auto f = read_followers_.find(read.chain.front().hash); f != read_followers_.end()) {
      for (SequenceId id : f->second)
        if (SchedSequence* follower = waiting(id)) follower->disk_wait = false;
      read_followers_.erase(f);
    }
    SchedSequence* seq = waiting(read.seq);
    if (!seq) continue;
    seq->disk_wait = false;
    const size_t bs = static_cast<size_t>(config_.block_size);
    for (size_t i = 0; i < r.payloads.size(); ++i) {
      const KvManager::ChainBlock& b = read.chain[i];
      const int32_t id = next_staging_id_++;
      kv_.stage(b.hash, b.parent_hash, std::span<const int32_t>(seq->tokens).subspan(static_cast<size_t>(b.first_token), bs), id);
      staged_bytes_ += r.payloads[i].size();
      staging_[id] = {seq->id, b.hash, std::move(r.payloads[i])};
    }
    if (auto l = live_.find(seq->id); l != live_.end()) requests_[l->second->request].disk_read_seconds += r.seconds;
  }
}

void Engine::load_from_disk(std::span<const BlockCopy> pairs) {
  for (const BlockCopy& p : pairs) {
    auto it = staging_.find(p.src);
    if (it == staging_.end()) fail("a KV block staged from disk is gone (staging id %d)", p.src);
    backend_.write_block(p.dst, it->second.bytes);
    staged_bytes_ -= it->second.bytes.size();
    staging_.erase(it);
  }
}

// Blocks staged for a sequence that no longer waits (it started without them, or ended) go.
void Engine::drop_stale_staging() {
  if (staging_.empty() && disk_looked_up_.empty()) return;
  std::unordered_set<SequenceId> waiting;
  for (const SchedSequence* seq : scheduler_.waiting()) waiting.insert(seq->id);
  // A sequence that left the queue is looked up again if it comes back (preempted, to recompute).
  std::erase_if(disk_looked_up_, [&](SequenceId id) { return !waiting.contains(id); });
  std::erase_if(staging_, [&](auto& entry) {
    if (waiting.contains(entry.second.for_seq)) return false;
    kv_.unstage(entry.second.hash, entry.first);
    staged_bytes_ -= entry.second.bytes.size();
    return true;
  });
}

KvSnapshot Engine::snapshot() const {
  KvSnapshot s = kv_.snapshot();
  if (disk_)
    for (size_t b = 0; b < s.blocks.size(); ++b)
      if (s.blocks[b].has_hash && s.blocks[b].num_filled == s.block_size)
        s.blocks[b].on_disk = disk_->has(kv_.content_hash(static_cast<int32_t>(b)));
  return s;
}

int Engine::forget_on_disk(std::span<const int32_t> tokens, const std::vector<std::vector<int32_t>>& keep, uint64_t cache_salt) {
  if (!disk_) return 0;
  std::unordered_set<uint64_t> kept;
  for (const std::vector<int32_t>& k : keep)
    for (uint64_t h : kv_.chain_hashes(k, cache_salt)) kept.insert(h);
  int removed = 0;
  for (uint64_t h : kv_.chain_hashes(tokens, cache_salt))
    if (!kept.contains(h) && disk_->remove(h)) ++removed;
  return removed;
}

void Engine::write_sealed_to_disk() {
  if (!disk_) return;
  try {
    for (KvManager::SealedBlock& b : kv_.take_sealed()) {
      if (disk_->has(b.hash)) continue;
      std::vector<uint8_t> bytes(disk_->payload_bytes());
      backend_.read_block(b.block, bytes);
      if (disk_->write(b.hash, b.parent_hash, std::move(b.tokens), std::move(bytes))) kv_.record_disk_write(b.block);
    }
  } catch (const std::exception& e) {  // no memory for the copy: these blocks are not kept, the step goes on
    std::fprintf(stderr, "pagedchat: KV blocks not written to disk: %s\n", e.what());
  }
}

}  // namespace pagedchat
