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
  bool abort_sent = false, ended = false, went_idle = false;
  while (!ended) {
    if (!abort_sent && should_abort && should_abort()) {
      engine_.abort(run.id);
      abort_sent = true;
    }
    const bool more = engine_.step();
    for (const RequestUpdate& u : tracker_.take_updates()) {
      if (on_text)
        for (const EngineEvent& e : u.events)
          if (!e.text.empty()) on_text(e.text);
      ended = ended || u.done;
    }
    if (!more && !ended) {
      went_idle = true;  // nothing left to do and no end event: the engine lost the request (our bug)
      break;
    }
  }
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

}  // namespace pagedchat
