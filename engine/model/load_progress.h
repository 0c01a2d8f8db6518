#pragma once
// How far a model load has come (for a progress bar), and a way to cancel it. Each stage of
// the load reports a fraction from 0 to 1; once the caller sets the cancel flag, the next
// report throws LoadCancelled, and the normal unwinding releases what was built so far.
// A default LoadProgress reports nothing and cannot be cancelled.

#include <atomic>
#include <functional>
#include <string_view>

#include "engine/common/error.h"

namespace pagedchat {

class LoadCancelled : public Error {
 public:
  LoadCancelled() : Error("the load was cancelled") {}
};

class LoadProgress {
 public:
  // Called on the loading thread; stage names: "reading", "tokenizer", "packing weights".
  using Listener = std::function<void(std::string_view stage, double fraction)>;

  LoadProgress() = default;
  // cancelled may be set from any thread; it must outlive the load.
  LoadProgress(Listener listener, const std::atomic<bool>* cancelled)
      : listener_(std::move(listener)), cancelled_(cancelled) {}

  bool active() const { return listener_ || cancelled_; }
  void report(std::string_view stage, double fraction) const {
    if (cancelled_ && cancelled_->load(std::memory_order_relaxed)) throw LoadCancelled();
    if (listener_) listener_(stage, fraction);
  }

 private:
  Listener listener_;
  const std::atomic<bool>* cancelled_ = nullptr;
};

}  // namespace pagedchat
