#include "appcore/remote/vllm_pool_watcher.h"

#include <QMetaObject>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "remote/vllm_kv_subscriber.h"

using namespace pagedchat;
using namespace pagedchat::remote;

// What the watching thread and the UI thread share: the mirror and the changes not yet drawn.
struct VllmPoolWatcher::Shared {
  std::mutex mutex;
  VllmCacheMirror mirror;
  std::vector<VllmMirrorChange> changes;
  int64_t batches = 0;
  std::optional<uint64_t> lastSeq;
  bool queued = false;  // a frame is on its way to the UI thread: later batches join it
};

namespace {
// The view draws whole rows: the slots the mirror has, rounded up, never fewer than a row or two.
size_t drawnSlots(size_t used) { return std::max<size_t>(32, (used + 31) / 32 * 32); }

std::vector<KvBlockInfo> cellsOf(const std::vector<std::optional<VllmMirrorBlock>>& held, int32_t blockSize, size_t drawn) {
  std::vector<KvBlockInfo> cells(drawn);
  for (size_t i = 0; i < held.size(); ++i) {
    if (!held[i]) continue;
    KvBlockInfo& c = cells[i];
    // Stored is all vLLM says: held for its prefix cache, whether a request runs on it or not.
    c.state = BlockState::cached;
    c.num_filled = held[i]->num_tokens > 0 ? held[i]->num_tokens : blockSize;
    c.has_hash = true;
    c.in_prefix_cache = true;
    c.owners = {static_cast<SequenceId>(held[i]->chain)};
  }
  return cells;
}
}  // namespace

PoolFrame VllmPoolWatcher::frameOf(const VllmCacheMirror& mirror, const std::vector<VllmMirrorChange>& changes, int64_t batches) {
  PoolFrame f;
  f.snapshot.block_size = mirror.block_size() > 0 ? mirror.block_size() : 16;  // vLLM's default until a block says
  f.snapshot.blocks = cellsOf(mirror.device_slots(), f.snapshot.block_size, drawnSlots(mirror.device_slots().size()));
  if (!mirror.host_slots().empty())
    f.snapshot.host_blocks = cellsOf(mirror.host_slots(), f.snapshot.block_size, drawnSlots(mirror.host_slots().size()));
  // A prefix chain per sequence of the legend: its blocks in slot order, its tokens as sent.
  std::map<int32_t, PoolFrameSequence> chains;
  for (size_t i = 0; i < mirror.device_slots().size(); ++i) {
    const std::optional<VllmMirrorBlock>& b = mirror.device_slots()[i];
    if (!b) continue;
    PoolFrameSequence& s = chains[b->chain];
    s.blockTable.push_back(static_cast<int32_t>(i));
    s.tokens.insert(s.tokens.end(), b->tokens.begin(), b->tokens.end());
  }
  for (auto& [chain, s] : chains) {
    s.id = chain;
    s.chatTitle = tr("prefix %1").arg(chain);
    s.colorIndex = chain;
    f.sequences.push_back(std::move(s));
  }
  // Host-tier changes have no flash of their own (offloading is not our swap): drawn, not flashed.
  for (const VllmMirrorChange& c : changes) {
    if (c.host) continue;
    KvEvent e;
    e.block = c.slot;
    if (c.kind == VllmMirrorChange::Kind::stored) {
      e.kind = KvEventKind::allocate;
      e.seq = c.chain;
      e.block_state = BlockState::cached;
    } else {
      e.kind = KvEventKind::evict;
      e.block_state = BlockState::free;
    }
    f.events.push_back(e);
  }
  f.fromVllmEvents = true;
  f.stepIndex = batches;
  f.stats.num_steps = batches;
  f.lastStepSummary = tr("%1 blocks stored, %2 removed since the watch began (%3 removals of blocks stored before it)")
                          .arg(mirror.num_stored())
                          .arg(mirror.num_removed())
                          .arg(mirror.num_unknown_removed());
  return f;
}

VllmPoolWatcher::VllmPoolWatcher(QObject* parent) : QObject(parent) {}

VllmPoolWatcher::~VllmPoolWatcher() { stop(); }

void VllmPoolWatcher::start(const QString& endpoint, const QString& replay) {
  stop();
  m_endpoint = endpoint;
  m_stop = std::make_shared<std::atomic<bool>>(false);
  const int generation = ++m_generation;
  auto shared = std::make_shared<Shared>();
  VllmKvSubscription sub{endpoint.toStdString(), replay.toStdString(), {}};
  m_thread = std::thread([this, generation, sub, shared, stop = m_stop] {
    auto say = [this, generation](const QString& sentence) {
      QMetaObject::invokeMethod(this, [this, generation, sentence] {
        if (generation == m_generation) emit note(sentence);
      }, Qt::QueuedConnection);
    };
    VllmKvWatchCallbacks cb;
    cb.on_batch = [&](uint64_t seq, const VllmKvBatch& batch) {
      {
        std::lock_guard<std::mutex> lock(shared->mutex);
        // The sequence going back: vLLM started again (the subscriber follows it), its cache empty.
        if (shared->lastSeq && seq <= *shared->lastSeq) {
          shared->mirror.clear();
          shared->changes.clear();
          say(tr("vLLM started again: its cache is drawn from empty."));
        }
        shared->lastSeq = seq;
        std::vector<VllmMirrorChange> changes = shared->mirror.apply(batch);
        ++shared->batches;
        shared->changes.insert(shared->changes.end(), changes.begin(), changes.end());
        if (shared->changes.size() > kMaxChanges)  // the oldest flashes go; the picture stays exact
          shared->changes.erase(shared->changes.begin(), shared->changes.end() - kMaxChanges);
        if (std::exchange(shared->queued, true)) return;
      }
      QMetaObject::invokeMethod(this, [this, generation, shared] {
        PoolFrame f;
        {
          std::lock_guard<std::mutex> lock(shared->mutex);
          f = frameOf(shared->mirror, shared->changes, shared->batches);
          shared->changes.clear();
          shared->queued = false;
        }
        if (generation == m_generation) emit frame(f);
      }, Qt::QueuedConnection);
    };
    cb.on_gap = [&](uint64_t first, uint64_t count) {
      say(tr("%1 event batches from #%2 were lost (vLLM's replay did not have them): blocks they stored or removed may be "
             "drawn wrong until they change again.").arg(count).arg(first));
    };
    cb.on_bad_batch = [&](const std::string& why) { say(tr("An event batch was skipped: %1").arg(QString::fromStdString(why))); };
    const std::string error = watch_vllm_kv_events(sub, cb, stop.get());
    const QString why = QString::fromStdString(error);
    QMetaObject::invokeMethod(this, [this, generation, why] {
      if (generation == m_generation) emit stopped(why);
    }, Qt::QueuedConnection);
  });
}

void VllmPoolWatcher::stop() {
  ++m_generation;  // what the stopped watch still has queued is not shown
  if (m_stop) m_stop->store(true);
  if (m_thread.joinable()) m_thread.join();
  m_stop.reset();
}
