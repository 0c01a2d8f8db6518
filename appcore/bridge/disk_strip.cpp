#include "appcore/bridge/disk_strip.h"

#include <unordered_map>

namespace {
constexpr qint64 kMinRebuildMs = 250;
}  // namespace

void DiskStrip::setHistory(int64_t chat, std::vector<int32_t> tokens) {
  if (tokens.empty()) {
    if (m_histories.erase(chat) > 0) m_changed = true;
    return;
  }
  auto& held = m_histories[chat];
  if (held == tokens) return;
  held = std::move(tokens);
  m_changed = true;
}

void DiskStrip::clear() {
  m_histories.clear();
  m_blocks.clear();
  m_changed = true;
  m_diskCounts = -1;
}

void DiskStrip::fill(const pagedchat::Engine& engine, bool poolMoved, PoolFrame& frame) {
  const pagedchat::EngineStats stats = engine.stats();
  if (!stats.disk_tier) return;
  frame.numDiskModelBlocks = stats.disk.num_own_files;
  const pagedchat::KvDiskStats& d = stats.disk;
  const int64_t counts = d.num_written + d.num_read + d.num_refused + d.num_evicted + d.num_own_files;
  const bool due = !m_built.isValid() || m_built.elapsed() >= kMinRebuildMs;
  if (m_changed || (due && (counts != m_diskCounts || poolMoved))) {
    m_blocks = build(engine, m_histories, PoolFrame::kMaxDiskBlocks);
    m_changed = false;
    m_diskCounts = counts;
    m_built.start();
  }
  frame.diskBlocks = m_blocks;
}

std::vector<PoolFrameDiskBlock> DiskStrip::build(const pagedchat::Engine& engine, const std::map<int64_t, std::vector<int32_t>>& histories,
                                                 size_t max) {
  std::vector<PoolFrameDiskBlock> blocks;
  if (histories.empty()) return blocks;
  const pagedchat::KvManager& kv = engine.kv();
  std::unordered_map<uint64_t, int32_t> inPool;  // content hash -> pool block
  for (int32_t b = 0; b < kv.num_blocks(); ++b)
    if (const uint64_t h = kv.content_hash(b); h != 0) inPool.emplace(h, b);
  std::unordered_map<uint64_t, size_t> listed;  // hash -> index in blocks
  const auto bs = static_cast<size_t>(engine.block_size());
  for (const auto& [chat, tokens] : histories) {
    const std::vector<uint64_t> chain = engine.disk_chain(tokens);
    for (size_t i = 0; i < chain.size(); ++i) {
      if (auto it = listed.find(chain[i]); it != listed.end()) {
        blocks[it->second].chats.push_back(chat);
        continue;
      }
      if (blocks.size() >= max) return blocks;
      PoolFrameDiskBlock b;
      b.chats = {chat};
      b.index = static_cast<int32_t>(i);
      b.tokens.assign(tokens.begin() + static_cast<ptrdiff_t>(i * bs), tokens.begin() + static_cast<ptrdiff_t>((i + 1) * bs));
      if (auto p = inPool.find(chain[i]); p != inPool.end()) b.poolBlock = p->second;
      listed.emplace(chain[i], blocks.size());
      blocks.push_back(std::move(b));
    }
  }
  return blocks;
}
