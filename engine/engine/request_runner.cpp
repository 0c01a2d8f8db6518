// The synchronous client of the engine: submit, step until the request's end, collect.
#include "engine/engine/request_runner.h"

#include "engine/common/error.h"

namespace pagedchat {

RequestRunner::RequestRunner(Engine& engine) : engine_(engine), tracker_(engine) {}

RequestRun RequestRunner::run(Request request, const std::function<void(std::string_view)>& on_text,
                              const std::function<bool()>& should_abort) {
  if (request.n != 1) fail("RequestRunner runs one sample (n = 1), not %d", request.n);
  if (running_) fail("RequestRunner::run is not reentrant");
  running_ = true;
  RequestRun run;
  const int64_t prefilled_before = engine_.stats().num_prefill_tokens;
  run.id = engine_.submit(std::move(request));
  tracker_.track(run.id, 1);
  const bool went_idle = !step_until_done(
      run.id,
      [&](const RequestUpdate& u) {
        if (on_text)
          for (const EngineEvent& e : u.events)
            if (!e.text.empty()) on_text(e.text);
      },
      should_abort, {});
  running_ = false;
  RequestOutput out = tracker_.take_output(run.id);
  const SampleOutput& s = out.samples[0];
  run.seq = s.seq;
  run.tokens = s.tokens;
  run.text = s.text;
  run.finish_reason = out.ok() ? s.finish_reason : "error";
  run.error = out.error;
  run.parked = s.parked;
  run.spec = s.spec;
  if (went_idle) {
    run.error = "the engine went idle before request " + std::to_string(run.id) + " ended";
    run.finish_reason = "error";
    out.done_at = s.last_token_at;
  }
  run.num_prompt_tokens = engine_.stats().num_prefill_tokens - prefilled_before;
  const double first = s.first_token_at >= 0 ? s.first_token_at : out.done_at;
  run.prompt_seconds = first;
  run.decode_seconds = out.done_at - first;
  return run;
}

RequestOutput RequestRunner::run_all(Request request, const std::function<void()>& after_step) {
  if (running_) fail("RequestRunner::run_all is not reentrant");
  running_ = true;
  const int n = request.n;
  const RequestId id = engine_.submit(std::move(request));
  tracker_.track(id, n);
  const bool ended = step_until_done(id, {}, {}, after_step);
  running_ = false;
  RequestOutput out = tracker_.take_output(id);
  if (!ended) out.error = "the engine went idle before request " + std::to_string(id) + " ended";
  return out;
}

bool RequestRunner::step_until_done(RequestId id, const std::function<void(const RequestUpdate&)>& on_update,
                                    const std::function<bool()>& should_abort, const std::function<void()>& after_step) {
  bool abort_sent = false;
  while (true) {
    if (!abort_sent && should_abort && should_abort()) {
      engine_.abort(id);
      abort_sent = true;
    }
    const bool more = engine_.step();
    if (after_step) after_step();
    bool ended = false;
    for (const RequestUpdate& u : tracker_.take_updates()) {
      if (on_update) on_update(u);
      ended = ended || u.done;
    }
    if (ended) return true;
    if (!more) return false;  // nothing left to do and no end event: the engine lost the request
  }
}

}  // namespace pagedchat
