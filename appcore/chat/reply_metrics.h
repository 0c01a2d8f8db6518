#pragma once
// What the bridge measures of one reply (one sample of a turn), shown under the message and
// saved with it: tokens, time to first token, decode speed, and how much of the prompt was
// computed rather than served from the KV cache.

#include <QLocale>
#include <QMetaType>
#include <QString>

#include <algorithm>

#include "engine/engine/request_tracker.h"

struct ReplyMetrics {
  int numTokens = 0;                // tokens sampled
  double secondsToFirstToken = 0;   // submit to the first sampled token
  double tokensPerSecond = 0;       // decode: tokens after the first over the time they took
  qint64 numPromptTokens = 0;       // prompt tokens this turn added to the sequence
  qint64 numCachedPromptTokens = 0; // of which the prefix cache served (disk reads included)
  qint64 numDiskPromptTokens = 0;   // of those, read from the disk tier (not saved with the chat)
  double diskReadSeconds = 0;       // the reading's time
  double diskPromptSeconds = 0;     // about what computing those tokens would have taken (0: not known)
  // "stop", "length" (its max tokens), "abort", "error"; "tool_calls": it called tools; "context": it reached the end of the
  // chat's context before its max tokens; "interrupted": the app (or its engine) went before the
  // reply ended, as a reply in flight is saved. Saved with the chat: never rename these.
  QString finishReason;
  static inline const QString kInterrupted = QStringLiteral("interrupted");
  static inline const QString kContextEnd = QStringLiteral("context");
  static inline const QString kToolCalls = QStringLiteral("tool_calls");  // it ended calling tools
  // Speculative decoding: drafted tokens verified, those kept, and the decode steps the reply
  // took (not saved with the chat).
  qint64 numDrafted = 0, numAccepted = 0, numDecodeSteps = 0;
  // Beam search: the hypothesis' summed log-probability; its tokens all came when the search
  // ended (secondsToFirstToken is the search's time, and there is no decode speed to show).
  bool beamSearch = false;
  double logprob = 0;

  bool isEmpty() const { return numTokens == 0 && finishReason.isEmpty(); }
  // A finished sample's figures; numPromptTokens: what its turn submitted.
  static ReplyMetrics of(const pagedchat::SampleOutput& s, qint64 numPromptTokens, const pagedchat::RequestOutput& request) {
    ReplyMetrics m = of(s, numPromptTokens, request.num_cached_prompt_tokens);
    m.numDiskPromptTokens = request.num_disk_prompt_tokens;
    m.diskReadSeconds = request.disk_read_seconds;
    m.diskPromptSeconds = request.disk_prompt_seconds;
    return m;
  }
  static ReplyMetrics of(const pagedchat::SampleOutput& s, qint64 numPromptTokens, qint64 numCachedPromptTokens) {
    ReplyMetrics m;
    m.numTokens = static_cast<int>(s.tokens.size());
    m.secondsToFirstToken = s.first_token_at;
    m.tokensPerSecond = s.tokens.size() > 1 ? (s.tokens.size() - 1) / std::max(s.last_token_at - s.first_token_at, 1e-9) : 0.0;
    m.numPromptTokens = numPromptTokens;
    m.numCachedPromptTokens = numCachedPromptTokens;
    m.finishReason = QString::fromStdString(s.finish_reason);
    m.numDrafted = s.spec.drafted;
    m.numAccepted = s.spec.accepted;
    m.numDecodeSteps = s.spec.decode_steps;
    if (s.beam) {
      m.beamSearch = true;
      m.logprob = s.cumulative_logprob;
      m.tokensPerSecond = 0;
    }
    return m;
  }
  // One line for the transcript: "12 tokens · 35.1 tok/s · first token 84 ms", and with
  // speculative decoding "· drafts 78% kept, 1.9 tokens a step".
  QString summary() const {
    // What was measured of an interrupted reply went with the app (or the engine).
    if (finishReason == kInterrupted) return QStringLiteral("interrupted before it ended (the app closed, or the model was changed)");
    if (beamSearch)
      return QStringLiteral("%1 tokens · beam search %2 s · log-probability %3%4")
          .arg(numTokens)
          .arg(secondsToFirstToken, 0, 'f', 2)
          .arg(logprob, 0, 'f', 2)
          .arg(ending());
    QString drafts;
    if (numDrafted > 0 && numDecodeSteps > 0)
      drafts = QStringLiteral(" · drafts %1% kept, %2 tokens a step")
                   .arg(100.0 * static_cast<double>(numAccepted) / static_cast<double>(numDrafted), 0, 'f', 0)
                   .arg(static_cast<double>(std::max(numTokens - 1, 0)) / static_cast<double>(numDecodeSteps), 0, 'f', 1);
    return QStringLiteral("%1 tokens · %2 tok/s · first token %3 ms%4%5%6")
        .arg(numTokens)
        .arg(tokensPerSecond, 0, 'f', 1)
        .arg(secondsToFirstToken * 1000.0, 0, 'f', 0)
        .arg(drafts, fromDisk())
        .arg(ending());
  }
  // " · 8,012 tokens read from disk in 412 ms instead of about 3 min of prompt": the chat's
  // history came back from the disk tier (the estimate once the engine knows its prompt speed).
  QString fromDisk() const {
    if (numDiskPromptTokens <= 0) return QString();
    QString line = QStringLiteral(" · %1 tokens read from disk in %2")
                       .arg(QLocale(QLocale::English).toString(numDiskPromptTokens), duration(diskReadSeconds));
    if (diskPromptSeconds > 0) line += QStringLiteral(" instead of about %1 of prompt").arg(duration(diskPromptSeconds));
    return line;
  }
  // "412 ms", "3.4 s", "48 s", "3 min", "1 h 12 min".
  static QString duration(double seconds) {
    if (seconds < 1) return QStringLiteral("%1 ms").arg(std::max(seconds * 1000.0, 1.0), 0, 'f', 0);
    if (seconds < 10) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    if (seconds < 90) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 0);
    const auto minutes = static_cast<qint64>(seconds / 60 + 0.5);
    if (minutes < 60) return QStringLiteral("%1 min").arg(minutes);
    return QStringLiteral("%1 h %2 min").arg(minutes / 60).arg(minutes % 60);
  }
  // How it ended, when not by itself.
  QString ending() const {
    if (finishReason == QLatin1String("abort")) return QStringLiteral(" · stopped");
    if (finishReason == QLatin1String("length")) return QStringLiteral(" · cut at its length limit");
    if (finishReason == kContextEnd) return QStringLiteral(" · stopped at the end of the context (the chat's context is full)");
    return QString();
  }
};
Q_DECLARE_METATYPE(ReplyMetrics)
