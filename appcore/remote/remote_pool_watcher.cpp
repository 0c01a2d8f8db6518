#include "appcore/remote/remote_pool_watcher.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "remote/pool_client.h"

using namespace pagedchat;

namespace {
bool blockState(const QString& name, BlockState* state) {
  for (BlockState s : {BlockState::free, BlockState::in_use, BlockState::cached, BlockState::swapped})
    if (name == QLatin1String(block_state_name(s))) {
      *state = s;
      return true;
    }
  return false;
}

bool blocksFrom(const QJsonArray& list, std::vector<KvBlockInfo>* blocks) {
  for (const QJsonValue v : list) {
    const QJsonObject o = v.toObject();
    KvBlockInfo b;
    if (!blockState(o.value(QStringLiteral("s")).toString(), &b.state)) return false;
    b.ref_count = o.value(QStringLiteral("r")).toInt();
    b.num_filled = o.value(QStringLiteral("f")).toInt();
    b.has_hash = o.value(QStringLiteral("h")).toInt() != 0;
    b.in_prefix_cache = o.value(QStringLiteral("p")).toInt() != 0;
    for (const QJsonValue s : o.value(QStringLiteral("o")).toArray()) b.owners.push_back(s.toInteger());
    blocks->push_back(std::move(b));
  }
  return true;
}

}  // namespace

bool RemotePoolWatcher::frameFromJson(const QByteArray& json, PoolFrame* frame, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  QJsonParseError parse;
  const QJsonObject o = QJsonDocument::fromJson(json, &parse).object();
  if (parse.error != QJsonParseError::NoError || o.isEmpty()) return fail(QStringLiteral("not a JSON object: %1").arg(parse.errorString()));
  PoolFrame f;
  f.stepIndex = o.value(QStringLiteral("step")).toInteger();
  f.stats.num_steps = f.stepIndex;
  f.snapshot.block_size = o.value(QStringLiteral("block_size")).toInt();
  if (f.snapshot.block_size <= 0 || f.snapshot.block_size > 4096) return fail(QStringLiteral("no block size"));
  constexpr qsizetype kMaxBlocks = 1 << 20;  // a million blocks: past any pool's, and past what the view may draw
  if (o.value(QStringLiteral("blocks")).toArray().size() > kMaxBlocks || o.value(QStringLiteral("host_blocks")).toArray().size() > kMaxBlocks)
    return fail(QStringLiteral("more blocks than any pool holds"));
  if (!blocksFrom(o.value(QStringLiteral("blocks")).toArray(), &f.snapshot.blocks) ||
      !blocksFrom(o.value(QStringLiteral("host_blocks")).toArray(), &f.snapshot.host_blocks))
    return fail(QStringLiteral("a block of an unknown state"));
  for (const QJsonValue v : o.value(QStringLiteral("cached_lru")).toArray()) {
    const int b = v.toInt(-1);
    if (b < 0 || b >= static_cast<int>(f.snapshot.blocks.size())) return fail(QStringLiteral("a cached block past the pool"));
    f.snapshot.cached_lru.push_back(b);
  }
  for (const KvBlockInfo& b : f.snapshot.blocks)
    if (b.ref_count < 0 || b.num_filled < 0 || b.num_filled > f.snapshot.block_size) return fail(QStringLiteral("a block's counts out of range"));
  for (const QJsonValue v : o.value(QStringLiteral("sequences")).toArray()) {
    const QJsonObject s = v.toObject();
    PoolFrameSequence seq;
    seq.id = s.value(QStringLiteral("id")).toInteger();
    const qint64 request = s.value(QStringLiteral("request")).toInteger(-1);
    seq.chatTitle = request >= 0 ? tr("request %1").arg(request) : tr("sequence %1").arg(seq.id);
    seq.colorIndex = static_cast<int>(request >= 0 ? request : seq.id);
    seq.responseId = s.value(QStringLiteral("response")).toString().left(128);
    seq.numStored = std::max<qint64>(s.value(QStringLiteral("stored")).toInteger(), 0);
    for (const QJsonValue b : s.value(QStringLiteral("table")).toArray()) seq.blockTable.push_back(b.toInt());
    f.sequences.push_back(std::move(seq));
  }
  for (const QJsonValue v : o.value(QStringLiteral("events")).toArray()) {
    const QJsonObject e = v.toObject();
    KvEvent ev;
    const QString kind = e.value(QStringLiteral("kind")).toString();
    bool known = false;
    for (int k = 0; k < kNumKvEventKinds && !known; ++k)
      if (kind == QLatin1String(kv_event_name(static_cast<KvEventKind>(k)))) {
        ev.kind = static_cast<KvEventKind>(k);
        known = true;
      }
    if (!known) continue;  // a kind of a newer server: not drawn
    ev.seq = e.value(QStringLiteral("seq")).toInteger(-1);
    ev.block = e.value(QStringLiteral("block")).toInt(-1);
    ev.peer = e.value(QStringLiteral("peer")).toInteger(-1);
    ev.ref_count = e.value(QStringLiteral("ref")).toInt();
    blockState(e.value(QStringLiteral("state")).toString(), &ev.block_state);
    // Events naming blocks the pool does not have are a broken frame: they would be drawn out of
    // bounds. peer is a device block (copy-on-write), a host block (swaps, a swapped free) or a sequence.
    const auto device = static_cast<int64_t>(f.snapshot.blocks.size()), host = static_cast<int64_t>(f.snapshot.host_blocks.size());
    const bool hostPeer = ev.kind == KvEventKind::swap_out || ev.kind == KvEventKind::swap_in ||
                          (ev.kind == KvEventKind::free && ev.block < 0) || ev.kind == KvEventKind::cache_hit;
    if (ev.block < -1 || ev.block >= device || (ev.kind == KvEventKind::copy_on_write && (ev.peer < -1 || ev.peer >= device)) ||
        (hostPeer && (ev.peer < -1 || ev.peer >= host)))
      return fail(QStringLiteral("an event past the pool"));
    f.events.push_back(ev);
  }
  for (const PoolFrameSequence& s : f.sequences)
    for (int32_t b : s.blockTable)
      if (b < 0 || b >= static_cast<int32_t>(std::max(f.snapshot.blocks.size(), f.snapshot.host_blocks.size())))
        return fail(QStringLiteral("a block table past the pool"));
  f.contiguousReservedTokens = 0;
  *frame = std::move(f);
  return true;
}

RemotePoolWatcher::RemotePoolWatcher(QObject* parent) : QObject(parent) {}

RemotePoolWatcher::~RemotePoolWatcher() { stop(); }

void RemotePoolWatcher::start(const QString& url, const QString& apiKey) {
  stop();
  m_url = url;
  m_stop = std::make_shared<std::atomic<bool>>(false);
  const int generation = ++m_generation;
  m_thread = std::thread([this, generation, endpoint = remote::Endpoint{url.toStdString(), apiKey.toStdString()}, stop = m_stop] {
    // Only the latest frame waits for the UI thread: a view slower than the server skips frames.
    auto latest = std::make_shared<std::pair<std::mutex, std::optional<PoolFrame>>>();
    auto on_frame = [&](std::string_view json) {
      PoolFrame f;
      if (!frameFromJson(QByteArray(json.data(), static_cast<qsizetype>(json.size())), &f)) return;
      bool queued;
      {
        std::lock_guard<std::mutex> lock(latest->first);
        queued = latest->second.has_value();
        latest->second = std::move(f);
      }
      if (queued) return;
      QMetaObject::invokeMethod(this, [this, generation, latest] {
        std::optional<PoolFrame> f;
        {
          std::lock_guard<std::mutex> lock(latest->first);
          f.swap(latest->second);
        }
        if (f && generation == m_generation) emit frame(*f);
      }, Qt::QueuedConnection);
    };
    // A server still loading its model (or rebuilding a pool a lesson asked for) answers 503: it
    // is there and will have a pool shortly, so the watch asks again every half second rather
    // than leaving the view (a class watching a teacher's server started a moment ago), for up
    // to two minutes; one that answers 503 for longer is said, as any other failure.
    constexpr int kLoadingRetries = 240;
    remote::RemoteError e = remote::watch_pool(endpoint, on_frame, stop.get());
    for (int retry = 0; retry < kLoadingRetries && e.http_status == 503 && !stop->load(); ++retry) {
      for (int slice = 0; slice < 5 && !stop->load(); ++slice) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (!stop->load()) e = remote::watch_pool(endpoint, on_frame, stop.get());
    }
    if (stop->load() && e.http_status == 503) e.kind = remote::RemoteErrorKind::stopped;
    const QString why = e.kind == remote::RemoteErrorKind::stopped ? QString() : QString::fromStdString(e.sentence());
    QMetaObject::invokeMethod(this, [this, generation, why] {
      if (generation == m_generation) emit stopped(why);
    }, Qt::QueuedConnection);
  });
}

void RemotePoolWatcher::stop() {
  ++m_generation;  // what the stopped watch still has queued is not shown
  if (m_stop) m_stop->store(true);
  if (m_thread.joinable()) m_thread.join();
  m_stop.reset();
}
