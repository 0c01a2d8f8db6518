#pragma once
// GET /metrics: the engine's counters and the KV pool in Prometheus' text format, for a
// scraper or a curious user (`curl localhost:8080/metrics`).

#include <QByteArray>

#include <cstdint>

namespace pagedchat {
struct EngineStats;
}  // namespace pagedchat

// What the server counts itself, next to the engine's stats.
struct ServerCounters {
  int64_t numRequests = 0;          // completion requests accepted by the engine
  int64_t numRejected = 0;          // refused before the engine (4xx, 503)
  int64_t numAborted = 0;           // clients that hung up before their reply ended
  int64_t numCachedPromptTokens = 0;  // prompt tokens served from the prefix cache
  int64_t numSlowReaderHolds = 0;   // requests held back because their client read too slowly
  int64_t numSlowReaderAborts = 0;  // of those, aborted when the client did not catch up in time
  int64_t numEndedByShutdown = 0;   // requests still running when the shutdown's grace ran out
  int numActive = 0;                // requests the engine host holds (what 429 is decided on)
  int numHeld = 0;                  // requests held back now (slow readers)
  int numConnections = 0;           // open HTTP connections
  int64_t numConnectionsRefused = 0;  // connections over the cap, answered 503
  // From a request's acceptance by the engine to its first token (its wait in the queue and its
  // prompt): the sum, the count and the longest, over the requests that got one.
  double firstTokenWaitSeconds = 0;
  int64_t numFirstTokenWaits = 0;
  double maxFirstTokenWaitSeconds = 0;
};

QByteArray prometheusText(const pagedchat::EngineStats& stats, const ServerCounters& server);
