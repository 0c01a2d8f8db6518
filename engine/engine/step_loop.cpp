// One engine step with its hooks (see step_loop.h).
#include "engine/engine/step_loop.h"

#include <exception>

#include "engine/engine/engine.h"

namespace pagedchat {

bool StepLoop::step() {
  if (hooks_.before_step) hooks_.before_step();
  try {
    engine_->step();
  } catch (const std::exception& e) {
    // The engine reports request errors as events; an exception here is our bug or memory
    // running out. The owner fails the requests in flight with it; the loop goes on.
    if (hooks_.on_step_failed) hooks_.on_step_failed(std::string("the engine step failed: ") + e.what());
  }
  return engine_->has_work();
}

}  // namespace pagedchat
