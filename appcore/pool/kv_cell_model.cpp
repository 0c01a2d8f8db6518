// Display records of the block-pool view's cells and the text a hovered cell shows.
#include "appcore/pool/kv_cell_model.h"

#include <QStringList>

#include <algorithm>

using namespace pagedchat;

const char* kvCellKindName(KvCellKind kind) {
  switch (kind) {
    case KvCellKind::Free: return "free";
    case KvCellKind::InUse: return "in use";
    case KvCellKind::Shared: return "shared";
    case KvCellKind::Cached: return "cached (evictable)";
    case KvCellKind::Swapped: return "swapped out (host)";
    case KvCellKind::OnDisk: return "on disk";
  }
  return "?";
}

namespace {
KvCell makeCell(const KvBlockInfo& info, const KvCellModel& model, const PoolFrame& frame) {
  KvCell c;
  c.refCount = info.ref_count;
  c.numFilled = info.num_filled;
  c.inPrefixCache = info.in_prefix_cache;
  c.onDisk = info.on_disk;
  switch (info.state) {
    case BlockState::free: c.kind = KvCellKind::Free; break;
    case BlockState::in_use: c.kind = info.ref_count > 1 ? KvCellKind::Shared : KvCellKind::InUse; break;
    case BlockState::cached: c.kind = KvCellKind::Cached; break;
    case BlockState::swapped: c.kind = KvCellKind::Swapped; break;
  }
  for (SequenceId owner : info.owners) {
    auto it = model.sequenceIndex.find(owner);
    if (it == model.sequenceIndex.end()) continue;
    c.colorIndex = frame.sequences[it->second].colorIndex;
    break;
  }
  return c;
}

const KvBlockInfo* blockInfo(const PoolFrame& frame, int32_t block, bool host) {
  const auto& infos = host ? frame.snapshot.host_blocks : frame.snapshot.blocks;
  if (block < 0 || static_cast<size_t>(block) >= infos.size()) return nullptr;
  return &infos[block];
}
}  // namespace

KvCellModel buildKvCellModel(const PoolFrame& frame) {
  KvCellModel model;
  model.blockSize = frame.snapshot.block_size;
  model.sequenceIndex.reserve(frame.sequences.size());
  for (size_t i = 0; i < frame.sequences.size(); ++i) model.sequenceIndex.emplace(frame.sequences[i].id, static_cast<int>(i));
  model.cells.reserve(frame.snapshot.blocks.size());
  for (const KvBlockInfo& info : frame.snapshot.blocks) model.cells.push_back(makeCell(info, model, frame));
  if (frame.slidingWindow.window > 0 && model.blockSize > 0) {
    // A block is outside when it is outside for every owner the frame lists (a shared prefix
    // may still be inside a shorter fork's window).
    std::vector<int8_t> outside(model.cells.size(), -1);  // -1: no owner seen, 0: inside for one, 1: outside so far
    for (const PoolFrameSequence& s : frame.sequences) {
      const int32_t gone = kvBlocksOutsideWindow(static_cast<int64_t>(s.tokens.size()), frame.slidingWindow.window, model.blockSize);
      for (size_t b = 0; b < s.blockTable.size(); ++b) {
        const int32_t id = s.blockTable[b];
        if (id < 0 || static_cast<size_t>(id) >= outside.size()) continue;
        const auto& owners = frame.snapshot.blocks[static_cast<size_t>(id)].owners;
        if (std::find(owners.begin(), owners.end(), s.id) == owners.end()) continue;  // swapped out: host ids
        const int8_t here = static_cast<int32_t>(b) < gone ? 1 : 0;
        outside[id] = outside[id] < 0 ? here : static_cast<int8_t>(outside[id] & here);
      }
    }
    for (size_t i = 0; i < model.cells.size(); ++i)
      model.cells[i].outsideWindow = outside[i] == 1 && model.cells[i].kind != KvCellKind::Free;
  }
  model.hostCells.reserve(frame.snapshot.host_blocks.size());
  for (const KvBlockInfo& info : frame.snapshot.host_blocks) model.hostCells.push_back(makeCell(info, model, frame));
  model.diskCells.reserve(frame.diskBlocks.size());
  for (const PoolFrameDiskBlock& b : frame.diskBlocks) {
    KvCell c;
    c.kind = KvCellKind::OnDisk;
    c.refCount = static_cast<int32_t>(b.chats.size());
    c.numFilled = model.blockSize;
    c.colorIndex = b.chats.empty() ? -1 : static_cast<int>(b.chats.front() % 1000);  // the chat's, as its sequences' (EngineBridge)
    c.onDisk = true;
    c.alsoInPool = b.poolBlock >= 0;
    model.diskCells.push_back(c);
  }
  return model;
}

int32_t kvBlocksOutsideWindow(int64_t num_tokens, int window, int32_t block_size) {
  if (window <= 0 || block_size <= 0) return 0;
  // The next token (position num_tokens) sees positions (num_tokens - window, num_tokens].
  const int64_t first_seen = num_tokens + 1 - window;
  return first_seen <= 0 ? 0 : static_cast<int32_t>(first_seen / block_size);
}

QString kvCellLabel(const KvCell& cell) {
  const bool shared = cell.kind == KvCellKind::Shared || (cell.kind == KvCellKind::OnDisk && cell.refCount > 1);
  return shared ? QString::number(cell.refCount) : QString();
}

std::vector<int32_t> kvBlockTokens(const PoolFrame& frame, const KvCellModel& model, int32_t block, bool host) {
  const KvBlockInfo* info = blockInfo(frame, block, host);
  const int32_t bs = frame.snapshot.block_size;
  if (!info || bs <= 0) return {};
  for (SequenceId owner : info->owners) {
    auto it = model.sequenceIndex.find(owner);
    if (it == model.sequenceIndex.end()) continue;
    const PoolFrameSequence& seq = frame.sequences[it->second];
    auto pos = std::find(seq.blockTable.begin(), seq.blockTable.end(), block);
    if (pos == seq.blockTable.end()) continue;
    const size_t first = static_cast<size_t>(pos - seq.blockTable.begin()) * bs;
    if (first >= seq.tokens.size()) return {};
    const size_t last = std::min(seq.tokens.size(), first + static_cast<size_t>(bs));
    return {seq.tokens.begin() + first, seq.tokens.begin() + last};
  }
  return {};
}

namespace {
QString textOf(const PoolFrame& frame, const std::vector<int32_t>& tokens) {
  QString text = frame.detokenize && *frame.detokenize ? (*frame.detokenize)(tokens) : QString();
  if (text.isNull()) {
    QStringList ids;
    for (int32_t t : tokens) ids << QString::number(t);
    text = QStringLiteral("[%1]").arg(ids.join(QLatin1Char(' ')));
  }
  return text;
}
}  // namespace

QString kvDiskBlockDescription(const PoolFrame& frame, int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= frame.diskBlocks.size()) return {};
  const PoolFrameDiskBlock& b = frame.diskBlocks[static_cast<size_t>(index)];
  const int32_t bs = frame.snapshot.block_size;
  QStringList lines;
  lines << QStringLiteral("On disk: block %1 of a chat's history (tokens %2-%3)").arg(b.index).arg(b.index * bs).arg((b.index + 1) * bs - 1);
  QStringList chats;
  for (qsizetype i = 0; i < static_cast<qsizetype>(b.chats.size()); ++i)
    chats << (i < b.titles.size() ? b.titles[i] : QStringLiteral("chat %1").arg(b.chats[static_cast<size_t>(i)]));
  lines << QStringLiteral("Chats: %1").arg(chats.join(QStringLiteral(", ")));
  lines << (b.poolBlock >= 0 ? QStringLiteral("In the pool too: block %1").arg(b.poolBlock)
                             : QStringLiteral("Only on disk: the chat's next turn reads it back instead of computing it"));
  if (!b.tokens.empty()) lines << QStringLiteral("Text: \u201c%1\u201d").arg(textOf(frame, b.tokens));
  return lines.join(QLatin1Char('\n'));
}

QString kvBlockDescription(const PoolFrame& frame, const KvCellModel& model, int32_t block, bool host) {
  const KvBlockInfo* info = blockInfo(frame, block, host);
  if (!info) return {};
  const std::vector<KvCell>& cells = host ? model.hostCells : model.cells;
  const KvCell cell = static_cast<size_t>(block) < cells.size() ? cells[block] : makeCell(*info, model, frame);
  QStringList lines;
  lines << (host ? QStringLiteral("Host block %1") : QStringLiteral("Block %1")).arg(block);
  lines << QStringLiteral("State: %1").arg(QString::fromLatin1(kvCellKindName(cell.kind)));
  lines << QStringLiteral("Ref count: %1").arg(info->ref_count);
  QStringList owners;
  for (SequenceId owner : info->owners) {
    auto it = model.sequenceIndex.find(owner);
    const QString title = it == model.sequenceIndex.end() ? QString() : frame.sequences[it->second].chatTitle;
    owners << (title.isEmpty() ? QStringLiteral("seq %1").arg(owner) : QStringLiteral("%1 (seq %2)").arg(title).arg(owner));
  }
  lines << QStringLiteral("Owners: %1").arg(owners.isEmpty() ? QStringLiteral("none") : owners.join(QStringLiteral(", ")));
  lines << QStringLiteral("Filled: %1 / %2 slots").arg(info->num_filled).arg(frame.snapshot.block_size);
  if (!host) lines << QStringLiteral("In prefix cache: %1").arg(info->in_prefix_cache ? QStringLiteral("yes") : QStringLiteral("no"));
  if (info->on_disk) lines << QStringLiteral("On disk too: a later prompt that starts the same way reads it back");
  if (cell.outsideWindow)
    lines << QStringLiteral("Outside the sliding window (%1 tokens): only the global layers (%2 of %3) read it")
                 .arg(frame.slidingWindow.window)
                 .arg(frame.slidingWindow.numLayers - frame.slidingWindow.numLocalLayers)
                 .arg(frame.slidingWindow.numLayers);
  const std::vector<int32_t> tokens = kvBlockTokens(frame, model, block, host);
  if (!tokens.empty()) {
    lines << QStringLiteral("Text: \u201c%1\u201d").arg(textOf(frame, tokens));
  } else if (info->state == BlockState::cached) {
    lines << QStringLiteral("Text: (kept for the prefix cache; no live owner)");
  }
  return lines.join(QLatin1Char('\n'));
}
