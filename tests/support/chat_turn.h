#pragma once
// One chat turn run to its end on an engine, for the suites that drive ChatSession directly.

#include "engine/chat/chat_session.h"
#include "engine/engine/engine.h"
#include "engine/engine/request_tracker.h"

namespace pagedchat::test {

// Submits the planned turn (its request as the caller set it, turn.request.n samples), steps the
// engine until it is idle and hands the output back to the chat. *context, when given, gets what
// turn_ended says the chat now holds.
inline RequestOutput run_chat_turn(Engine& engine, RequestTracker& tracker, ChatSession& chat, ChatSession::Turn turn,
                                   int* context = nullptr) {
  const int n = turn.request.n;
  const RequestId id = engine.submit(turn.request);
  tracker.track(id, n);
  chat.turn_started(id, std::move(turn));
  while (engine.step()) {}
  RequestOutput out = tracker.take_output(id);
  const int used = chat.turn_ended(engine, out);
  if (context) *context = used;
  return out;
}

}  // namespace pagedchat::test
