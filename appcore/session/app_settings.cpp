// Reading and writing the settings; out-of-range stored values fall back to the defaults.
#include "appcore/session/app_settings.h"

#include <QDir>
#include <QStandardPaths>

#include <algorithm>
#include <initializer_list>

#include "appcore/chat/chat_database.h"
#include "runtime/backend_args.h"

namespace {

// One stored number: the default when absent, unreadable or outside [lo, hi].
template <class T>
T stored(ChatDatabase& db, const QString& key, T fallback, T lo, T hi) {
  bool ok = false;
  const double v = db.setting(key).toDouble(&ok);
  if (!ok || v < static_cast<double>(lo) || v > static_cast<double>(hi)) return fallback;
  return static_cast<T>(v);
}

}  // namespace

AppSettings AppSettings::load(ChatDatabase& db) {
  AppSettings s;
  const AppSettings d;
  s.sampling.temperature = stored(db, QStringLiteral("sampling/temperature"), d.sampling.temperature, 0.0, 5.0);
  s.sampling.topP = stored(db, QStringLiteral("sampling/top_p"), d.sampling.topP, 0.0, 1.0);
  s.sampling.topK = stored(db, QStringLiteral("sampling/top_k"), d.sampling.topK, 0, 100000);
  s.sampling.minP = stored(db, QStringLiteral("sampling/min_p"), d.sampling.minP, 0.0, 1.0);
  s.sampling.repetitionPenalty = stored(db, QStringLiteral("sampling/repetition_penalty"), d.sampling.repetitionPenalty, 0.1, 5.0);
  s.sampling.frequencyPenalty = stored(db, QStringLiteral("sampling/frequency_penalty"), d.sampling.frequencyPenalty, -2.0, 2.0);
  s.sampling.presencePenalty = stored(db, QStringLiteral("sampling/presence_penalty"), d.sampling.presencePenalty, -2.0, 2.0);
  s.sampling.maxTokens = stored(db, QStringLiteral("sampling/max_tokens"), d.sampling.maxTokens, 1, 1 << 20);
  s.sampling.seed = stored<quint64>(db, QStringLiteral("sampling/seed"), d.sampling.seed, 0, quint64{1} << 53);
  s.blockSize = stored(db, QStringLiteral("engine/block_size"), d.blockSize, 1, 32);
  if (!std::ranges::count(std::initializer_list<int>{1, 4, 8, 16, 32}, s.blockSize)) s.blockSize = d.blockSize;
  s.kvMemoryMiB = stored(db, QStringLiteral("engine/kv_memory_mib"), d.kvMemoryMiB, 0, 1 << 20);
  s.swapMiB = stored(db, QStringLiteral("engine/swap_mib"), d.swapMiB, 0, 1 << 20);
  s.kvDisk = stored(db, QStringLiteral("engine/kv_disk"), d.kvDisk ? 1 : 0, 0, 1) != 0;
  s.kvDiskMiB = stored(db, QStringLiteral("engine/kv_disk_mib"), d.kvDiskMiB, 0, 1 << 30);
  s.maxBatchedTokens = stored(db, QStringLiteral("engine/max_batched_tokens"), d.maxBatchedTokens, 1, 1 << 16);
  s.threads = stored(db, QStringLiteral("engine/threads"), d.threads, 0, 1024);
  s.maxContext = stored(db, QStringLiteral("engine/max_context"), d.maxContext, 16, 1 << 20);
  for (int k = 0; k < kMaxColumns; ++k) {
    TurnSettings& c = s.compareColumns[static_cast<size_t>(k)];
    const TurnSettings& dc = d.compareColumns[static_cast<size_t>(k)];
    const QString key = QStringLiteral("compare/column%1/").arg(k);
    c.temperature = stored(db, key + QStringLiteral("temperature"), dc.temperature, 0.0, 5.0);
    c.topP = stored(db, key + QStringLiteral("top_p"), dc.topP, 0.0, 1.0);
    c.topK = stored(db, key + QStringLiteral("top_k"), dc.topK, 0, 100000);
    c.seed = stored<quint64>(db, key + QStringLiteral("seed"), dc.seed, 0, quint64{1} << 53);
  }
  const QString backend = db.setting(QStringLiteral("engine/backend"), d.backend);
  s.backend = backend == QLatin1String("cuda") ? backend : d.backend;
  const QString kvType = db.setting(QStringLiteral("engine/kv_type"), d.kvType);
  // A type the CPU pool has (runtime/backend_args.h, as the CLI and the server check it), else the default.
  const std::vector<std::string>& types = pagedchat::cpu_kv_types();
  s.kvType = std::find(types.begin(), types.end(), kvType.toStdString()) != types.end() ? kvType : d.kvType;
  const QString speculation = db.setting(QStringLiteral("engine/speculation"), d.speculation);
  s.speculation = speculation == QLatin1String("ngram") || speculation == QLatin1String("draft") ? speculation : d.speculation;
  s.draftModel = db.setting(QStringLiteral("engine/draft_model"), d.draftModel);
  const QString format = db.setting(QStringLiteral("engine/chat_template"), d.chatTemplate);
  s.chatTemplate = format == QLatin1String("builtin") || format == QLatin1String("plain") ? format : d.chatTemplate;
  s.teachingPreset = db.setting(QStringLiteral("engine/teaching_preset")) == QLatin1String("1");
  s.contextPolicy = db.setting(QStringLiteral("chat/context_policy")) == QLatin1String("1") ? ContextPolicy::stopAndAsk
                                                                                        : ContextPolicy::dropOldest;
  return s;
}

void AppSettings::save(ChatDatabase& db) const {
  auto put = [&](const char* key, auto v) { db.setSetting(QString::fromLatin1(key), QString::number(v)); };
  put("sampling/temperature", sampling.temperature);
  put("sampling/top_p", sampling.topP);
  put("sampling/top_k", sampling.topK);
  put("sampling/min_p", sampling.minP);
  put("sampling/repetition_penalty", sampling.repetitionPenalty);
  put("sampling/frequency_penalty", sampling.frequencyPenalty);
  put("sampling/presence_penalty", sampling.presencePenalty);
  put("sampling/max_tokens", sampling.maxTokens);
  put("sampling/seed", sampling.seed);
  put("engine/block_size", blockSize);
  put("engine/kv_memory_mib", kvMemoryMiB);
  put("engine/swap_mib", swapMiB);
  put("engine/kv_disk", kvDisk ? 1 : 0);
  put("engine/kv_disk_mib", kvDiskMiB);
  put("engine/max_batched_tokens", maxBatchedTokens);
  put("engine/threads", threads);
  put("engine/max_context", maxContext);
  db.setSetting(QStringLiteral("engine/backend"), backend);
  db.setSetting(QStringLiteral("engine/kv_type"), kvType);
  db.setSetting(QStringLiteral("engine/speculation"), speculation);
  db.setSetting(QStringLiteral("engine/draft_model"), draftModel);
  db.setSetting(QStringLiteral("engine/chat_template"), chatTemplate);
  db.setSetting(QStringLiteral("engine/teaching_preset"), teachingPreset ? QStringLiteral("1") : QStringLiteral("0"));
  db.setSetting(QStringLiteral("chat/context_policy"), QString::number(static_cast<int>(contextPolicy)));
  for (int k = 0; k < kMaxColumns; ++k) {
    const TurnSettings& c = compareColumns[static_cast<size_t>(k)];
    const QString key = QStringLiteral("compare/column%1/").arg(k);
    db.setSetting(key + QStringLiteral("temperature"), QString::number(c.temperature));
    db.setSetting(key + QStringLiteral("top_p"), QString::number(c.topP));
    db.setSetting(key + QStringLiteral("top_k"), QString::number(c.topK));
    db.setSetting(key + QStringLiteral("seed"), QString::number(c.seed));
  }
}

std::vector<TurnSettings> AppSettings::defaultCompareColumns() {
  // Greedy next to ever hotter sampling: what changes with temperature, at a glance.
  std::vector<TurnSettings> columns(kMaxColumns);
  const double temperatures[kMaxColumns] = {0.0, 0.7, 1.0, 1.3};
  for (int k = 0; k < kMaxColumns; ++k) columns[static_cast<size_t>(k)].temperature = temperatures[k];
  return columns;
}

TurnSettings AppSettings::variedTurn(int n) const {
  TurnSettings turn = sampling;
  turn.numSamples = n;
  for (int k = 0; k < std::clamp(n, 1, kMaxColumns); ++k) {
    const TurnSettings& c = compareColumns[static_cast<size_t>(k)];
    TurnSettings column = sampling;
    column.temperature = c.temperature;
    column.topP = c.topP;
    column.topK = c.topK;
    column.seed = c.seed;
    turn.columns.push_back(column);
  }
  return turn;
}

bool AppSettings::defaultKvDisk() { return !QStandardPaths::isTestModeEnabled(); }

QString AppSettings::kvDiskFolder() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath(QStringLiteral("kv-blocks"));
}

QString AppSettings::kvDiskLessonFolder() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath(QStringLiteral("kv-blocks-lesson"));
}

EngineBridge::Config AppSettings::engineConfig() const {
  EngineBridge::Config c;
  c.blockSize = blockSize;
  c.kvBytes = static_cast<qint64>(kvMemoryMiB) << 20;
  c.hostBytes = static_cast<qint64>(swapMiB) << 20;
  if (kvDisk) c.kvDiskDir = kvDiskFolder();
  c.kvDiskBytes = static_cast<qint64>(kvDiskMiB) << 20;
  c.maxBatchedTokens = maxBatchedTokens;
  c.threads = threads;
  c.maxContext = maxContext;
  c.backend = backend;
  c.kvType = kvType;
  c.speculation = speculation;
  c.draftModel = draftModel;
  c.chatFormat = chatTemplate;
  if (teachingPreset) {
    c.blockSize = teachingBlockSize;
    c.numBlocks = teachingBlocks;
    c.numHostBlocks = teachingHostBlocks;
    c.hostBytes = 0;
    c.kvDiskDir = teachingKvDisk ? kvDiskLessonFolder() : QString();
    c.kvDiskBytes = 0;
    c.maxContext = teachingContext;
    c.maxBatchedTokens = kTeachingStepTokens;
  }
  return c;
}

bool AppSettings::sameEngine(const AppSettings& o) const {
  return blockSize == o.blockSize && kvMemoryMiB == o.kvMemoryMiB && swapMiB == o.swapMiB && kvDisk == o.kvDisk &&
         kvDiskMiB == o.kvDiskMiB &&
         teachingBlocks == o.teachingBlocks && teachingHostBlocks == o.teachingHostBlocks && teachingKvDisk == o.teachingKvDisk &&
         teachingBlockSize == o.teachingBlockSize && teachingContext == o.teachingContext && maxBatchedTokens == o.maxBatchedTokens &&
         threads == o.threads && maxContext == o.maxContext && backend == o.backend && kvType == o.kvType &&
         speculation == o.speculation && draftModel == o.draftModel && teachingPreset == o.teachingPreset &&
         chatTemplate == o.chatTemplate;
}
