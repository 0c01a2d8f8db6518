#include "appcore/bridge/disk_strip.h"

#include <algorithm>
#include <unordered_map>

bool DiskStrip::setHistory(int64_t chat, std::vector<int32_t> tokens) {
  if (tokens.empty()) {
    if (m_histories.erase(chat) == 0) return false;
    m_pending = true;
    return true;
  }
  History& h = m_histories[chat];
  h.order = ++m_nextOrder;
  if (h.tokens == tokens) return false;  // measured again, unchanged (the order still moves: it was used)
  h.tokens = std::move(tokens);
  h.hashes.clear();
  m_pending = true;
  return true;
}

void DiskStrip::clear() {
  m_histories.clear();
  m_blocks.clear();
  m_pending = true;
  m_counts = {};
}

bool DiskStrip::fill(const pagedchat::Engine& engine, bool poolMoved, PoolFrame& frame) {
  const pagedchat::EngineStats stats = engine.stats();
  if (!stats.disk_tier) return false;
  const pagedchat::KvDiskStats& d = stats.disk;
  frame.numDiskModelBlocks = d.num_own_files;
  const DiskCounts counts{d.num_written, d.num_read, d.num_refused, d.num_evicted, d.num_own_files};
  if (poolMoved || counts != m_counts) m_pending = true;
  if (m_pending && (!m_built.isValid() || m_built.elapsed() >= kMinRebuildMs)) {
    build(engine);
    m_pending = false;
    m_counts = counts;
    m_built.start();
  }
  frame.diskBlocks = m_blocks;
  return m_pending;
}

void DiskStrip::build(const pagedchat::Engine& engine) {
  m_blocks.clear();
  std::vector<std::pair<int64_t, History*>> chats;
  for (auto& [chat, h] : m_histories) chats.emplace_back(chat, &h);
  std::sort(chats.begin(), chats.end(), [](const auto& a, const auto& b) { return a.second->order > b.second->order; });
  const pagedchat::KvManager& kv = engine.kv();
  std::unordered_map<uint64_t, int32_t> inPool;  // content hash -> pool block
  for (int32_t b = 0; b < kv.num_blocks(); ++b)
    if (const uint64_t h = kv.content_hash(b); h != 0) inPool.emplace(h, b);
  std::unordered_map<uint64_t, size_t> listed;  // hash -> index in m_blocks
  const auto bs = static_cast<size_t>(engine.block_size());
  for (const auto& [chat, h] : chats) {
    if (h->hashes.empty()) h->hashes = kv.chain_hashes(h->tokens, 0);
    // Its leading blocks on disk: a chain is read back only as far as its first missing block.
    for (size_t i = 0; i < h->hashes.size() && engine.on_disk(h->hashes[i]); ++i) {
      if (auto it = listed.find(h->hashes[i]); it != listed.end()) {
        m_blocks[it->second].chats.push_back(chat);
        continue;
      }
      if (m_blocks.size() >= PoolFrame::kMaxDiskBlocks) continue;  // full: later chats only join blocks listed
      PoolFrameDiskBlock b;
      b.chats = {chat};
      b.index = static_cast<int32_t>(i);
      b.tokens.assign(h->tokens.begin() + static_cast<ptrdiff_t>(i * bs), h->tokens.begin() + static_cast<ptrdiff_t>((i + 1) * bs));
      if (auto p = inPool.find(h->hashes[i]); p != inPool.end()) b.poolBlock = p->second;
      listed.emplace(h->hashes[i], m_blocks.size());
      m_blocks.push_back(std::move(b));
    }
  }
}
