#include "server/api/pool_watch.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace {
QJsonArray blocksJson(const std::vector<pagedchat::KvBlockInfo>& blocks) {
  QJsonArray out;
  for (const pagedchat::KvBlockInfo& b : blocks) {
    QJsonArray owners;
    for (pagedchat::SequenceId s : b.owners) owners.append(static_cast<qint64>(s));
    out.append(QJsonObject{{QStringLiteral("s"), QString::fromLatin1(pagedchat::block_state_name(b.state))},
                           {QStringLiteral("r"), b.ref_count},
                           {QStringLiteral("f"), b.num_filled},
                           {QStringLiteral("h"), b.has_hash ? 1 : 0},
                           {QStringLiteral("p"), b.in_prefix_cache ? 1 : 0},
                           {QStringLiteral("o"), owners}});
  }
  return out;
}
}  // namespace

QByteArray poolWatchJson(const PoolWatchFrame& f) {
  QJsonArray lru, sequences, events;
  for (int32_t b : f.snapshot.cached_lru) lru.append(b);
  for (const PoolWatchSequence& s : f.sequences) {
    QJsonArray table;
    for (int32_t b : s.block_table) table.append(b);
    sequences.append(QJsonObject{{QStringLiteral("id"), static_cast<qint64>(s.id)},
                                 {QStringLiteral("request"), static_cast<qint64>(s.request)},
                                 {QStringLiteral("response"), s.response},
                                 {QStringLiteral("stored"), s.num_stored},
                                 {QStringLiteral("table"), table}});
  }
  for (const pagedchat::KvEvent& e : f.events)
    events.append(QJsonObject{{QStringLiteral("kind"), QString::fromLatin1(pagedchat::kv_event_name(e.kind))},
                              {QStringLiteral("seq"), static_cast<qint64>(e.seq)},
                              {QStringLiteral("block"), e.block},
                              {QStringLiteral("peer"), static_cast<qint64>(e.peer)},
                              {QStringLiteral("ref"), e.ref_count},
                              {QStringLiteral("state"), QString::fromLatin1(pagedchat::block_state_name(e.block_state))}});
  const QJsonObject o{{QStringLiteral("step"), static_cast<qint64>(f.step)},
                      {QStringLiteral("block_size"), f.snapshot.block_size},
                      {QStringLiteral("blocks"), blocksJson(f.snapshot.blocks)},
                      {QStringLiteral("host_blocks"), blocksJson(f.snapshot.host_blocks)},
                      {QStringLiteral("cached_lru"), lru},
                      {QStringLiteral("sequences"), sequences},
                      {QStringLiteral("events"), events}};
  return QJsonDocument(o).toJson(QJsonDocument::Compact);
}
