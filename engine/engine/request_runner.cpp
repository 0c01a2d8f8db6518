// The synchronous client of the engine: submit, step until the request's end, collect.
#include "engine/engine/request_runner.h"

#include <chrono>

#include "engine/common/error.h"

namespace pagedchat {

RequestRunner::RequestRunner(Engine& engine) : engine_(engine) {
  engine_.subscribe([this](const EngineEvent& e) { on_event(e); });
}

void RequestRunner::on_event(const EngineEvent& e) {
  if (!current_ || e.request != current_->id || e.kind == EngineEventKind::kv) return;
  auto emit_text = [&](const std::string& text) {
    if (text.empty()) return;
    current_->text += text;
    if (on_text_ && *on_text_) (*on_text_)(text);
  };
  switch (e.kind) {
    case EngineEventKind::token:
      if (!first_token_seen_) {
        first_token_seen_ = true;
        first_token_at_ = clock_();
      }
      current_->seq = e.seq;
      current_->tokens.push_back(e.token);
      emit_text(e.text);
      break;
    case EngineEventKind::finished:
      current_->seq = e.seq;
      current_->finish_reason = e.reason;
      current_->parked = e.parked;
      emit_text(e.text);
      ended_ = true;
      break;
    case EngineEventKind::error:
      // A refused request ends here (no finished event follows); a failed step's finished
      // event ("error") comes within the same step.
      current_->error = e.reason;
      current_->finish_reason = "error";
      ended_ = true;
      break;
    case EngineEventKind::kv: break;
  }
  if (ended_ && ended_at_ == 0.0) ended_at_ = clock_();
}

RequestRun RequestRunner::run(Request request, const std::function<void(std::string_view)>& on_text,
                              const std::function<bool()>& should_abort) {
  if (request.n != 1) fail("RequestRunner runs one sample (n = 1), not %d", request.n);
  if (current_) fail("RequestRunner::run is not reentrant");
  RequestRun run;
  const auto t0 = std::chrono::steady_clock::now();
  clock_ = [t0] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  current_ = &run;
  on_text_ = &on_text;
  ended_ = first_token_seen_ = false;
  first_token_at_ = ended_at_ = 0.0;
  const int64_t prefilled_before = engine_.stats().num_prefill_tokens;
  run.id = engine_.submit(std::move(request));
  bool abort_sent = false;
  while (!ended_) {
    if (!abort_sent && should_abort && should_abort()) {
      engine_.abort(run.id);
      abort_sent = true;
    }
    if (!engine_.step() && !ended_) {
      // Nothing left to do and no end event: the engine lost the request (our bug).
      run.error = "the engine went idle before request " + std::to_string(run.id) + " ended";
      run.finish_reason = "error";
      ended_at_ = clock_();
      break;
    }
  }
  current_ = nullptr;
  on_text_ = nullptr;
  run.num_prompt_tokens = engine_.stats().num_prefill_tokens - prefilled_before;
  if (!first_token_seen_) first_token_at_ = ended_at_;
  run.prompt_seconds = first_token_at_;
  run.decode_seconds = ended_at_ - first_token_at_;
  return run;
}

}  // namespace pagedchat
