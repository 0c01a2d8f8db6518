#pragma once
// The one step loop of an engine that serves clients as they come (the server's EngineHost,
// the app's EngineBridge): one Engine::step per turn of its owner's event loop while there is
// work, so the owner's thread stays responsive between steps (commands, pause, a reload) and
// never busy-waits when idle. Qt-free: the owner passes `post`, which must queue a call of
// run_once() on the engine thread (a queued call), never run it inline.
//
// A step that throws is our bug or memory running out: on_step_failed gets the message (the
// owner fails the requests in flight rather than let them hang) and the loop goes on.

#include <atomic>
#include <functional>
#include <string>

namespace pagedchat {

class Engine;

class StepLoop {
 public:
  struct Hooks {
    std::function<void()> post;                                  // queue run_once() (required)
    std::function<void()> before_step;                           // optional
    std::function<void(const std::string&)> on_step_failed;      // optional
    std::function<void(bool more_work)> after_step;              // optional: deliver results
                                                                 // (after run_once's step only)
    // optional: a queued run found the loop paused and ran no step; what is owed to clients
    // without a step (a pool watcher's first frame) goes out here.
    std::function<void()> while_paused;
  };
  explicit StepLoop(Hooks hooks) : hooks_(std::move(hooks)) {}

  // Engine thread. null: nothing runs (no model loaded).
  void attach(Engine* engine) { engine_ = engine; }
  Engine* engine() const { return engine_; }

  // Any thread: makes sure a run_once() is queued.
  void wake() {
    if (!queued_.exchange(true)) hooks_.post();
  }
  // Engine thread. Paused: queued runs do nothing; step_once() still steps.
  void set_paused(bool paused) {
    paused_ = paused;
    if (!paused) wake();
  }
  bool paused() const { return paused_; }

  // Engine thread: the queued call. One step, then after_step, then again while there is work.
  // The flag is cleared before looking for work: a submit that lands after the look either
  // sees the flag clear and queues a run, or its command is seen here.
  void run_once() {
    queued_.store(false);
    if (!engine_) return;
    if (paused_) {
      if (hooks_.while_paused) hooks_.while_paused();
      return;
    }
    const bool more = step();
    if (hooks_.after_step) hooks_.after_step(more);
    if (more) wake();
  }
  // Engine thread: exactly one step (step mode), whether paused or not, without after_step
  // (the caller delivers what it did its own way); returns whether work is left.
  bool step_once() { return engine_ ? step() : false; }

 private:
  bool step();

  Hooks hooks_;
  Engine* engine_ = nullptr;
  std::atomic<bool> queued_{false};
  bool paused_ = false;
};

}  // namespace pagedchat
