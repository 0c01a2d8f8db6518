// Per-request outputs built once from the engine's events (see request_tracker.h).
#include "engine/engine/request_tracker.h"

#include <chrono>
#include <utility>

namespace pagedchat {

RequestTracker::RequestTracker(Clock clock) : clock_(std::move(clock)) {
  if (!clock_) {
    clock_ = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
}

RequestTracker::RequestTracker(Engine& engine, Clock clock) : RequestTracker(std::move(clock)) {
  engine.subscribe([this](const EngineEvent& e) { on_event(e); });
}

double RequestTracker::now() const { return clock_(); }

void RequestTracker::track(RequestId id, int num_samples) {
  Entry& entry = entries_[id];
  entry.output.id = id;
  entry.output.samples.resize(static_cast<size_t>(std::max(num_samples, 1)));
  entry.started_at = now();
}

void RequestTracker::forget(RequestId id) { entries_.erase(id); }

const RequestOutput* RequestTracker::output(RequestId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second.output;
}

std::vector<RequestId> RequestTracker::tracked() const {
  std::vector<RequestId> ids;
  for (const auto& [id, entry] : entries_) ids.push_back(id);
  return ids;
}

RequestId RequestTracker::request_of(SequenceId seq) const {
  for (const auto& [id, entry] : entries_)
    if (entry.output.sequences.count(seq)) return id;
  return -1;
}

void RequestTracker::on_event(const EngineEvent& e) {
  if (detached_ || e.request < 0) return;
  auto it = entries_.find(e.request);
  if (it == entries_.end() || it->second.output.done) return;
  Entry& entry = it->second;
  RequestOutput& out = entry.output;
  const SequenceId seq = e.kind == EngineEventKind::kv ? e.kv.seq : e.seq;
  if (seq >= 0) out.sequences.insert(seq);
  if (e.kind == EngineEventKind::kv) return;
  const double t = now() - entry.started_at;
  if (e.kind == EngineEventKind::error) {
    out.error = e.reason;
  } else if (e.index >= 0 && e.index < static_cast<int>(out.samples.size())) {
    SampleOutput& s = out.samples[static_cast<size_t>(e.index)];
    s.seq = e.seq;
    s.text += e.text;
    s.spec = e.spec;
    out.num_cached_prompt_tokens = e.num_cached_prompt_tokens;
    out.num_disk_prompt_tokens = e.num_disk_prompt_tokens;
    out.disk_read_seconds = e.disk_read_seconds;
    out.disk_prompt_seconds = e.disk_prompt_seconds;
    if (e.kind == EngineEventKind::token) {
      if (e.token >= 0) s.tokens.push_back(e.token);
      if (s.first_token_at < 0) s.first_token_at = t;
      s.last_token_at = t;
    } else {
      s.finished = true;
      s.parked = e.parked;
      s.finish_reason = e.reason;
      s.cumulative_logprob = e.cumulative_logprob;
      s.beam_score = e.beam_score;
      s.beam = e.beam;
      if (s.first_token_at < 0) s.first_token_at = s.last_token_at = t;
    }
  }
  if (e.request_done) {
    out.done = true;
    out.done_at = t;
  }
  entry.pending.push_back(e);
}

void RequestTracker::fail(RequestId id, const std::string& message) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.output.done) return;
  EngineEvent e;
  e.kind = EngineEventKind::error;
  e.request = id;
  e.reason = "request " + std::to_string(id) + ": " + message;
  e.request_done = true;
  on_event(e);
}

void RequestTracker::fail_all(const std::string& message) {
  for (RequestId id : tracked()) fail(id, message);
}

std::vector<RequestUpdate> RequestTracker::take_updates() {
  std::vector<RequestUpdate> updates;
  for (auto& [id, entry] : entries_) {
    if (entry.pending.empty()) continue;
    RequestUpdate u;
    u.id = id;
    u.events = std::exchange(entry.pending, {});
    u.num_cached_prompt_tokens = entry.output.num_cached_prompt_tokens;
    u.done = entry.output.done;
    updates.push_back(std::move(u));
  }
  return updates;
}

RequestOutput RequestTracker::take_output(RequestId id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return {};
  RequestOutput out = std::move(it->second.output);
  entries_.erase(it);
  return out;
}

}  // namespace pagedchat
