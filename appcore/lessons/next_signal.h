#pragma once
// A coroutine's wait for a QObject's next signal, or for a timeout: what the lessons' scenes
// await (a chat's turn ending, the pool's next frame, a model's load). It replaces QCoro's
// qCoro(obj, signal, timeout), whose version in Debian 12 (QCoro 0.8) resumes the coroutine from
// a queued connection whose slot holds the awaiter itself: a signal emitted twice before the first
// delivery ran (the pool's frames come so), or once as the timeout fired, ran the later delivery
// on an awaiter its finished coroutine had freed (AddressSanitizer: heap-use-after-free in
// test_small_window's lessons). Here the signal and the timer only hold the wait's state weakly,
// the first of them settles it and cuts the other off, and the resume is posted once, to the
// event loop (never run inside the emitter's call).
//
// Usage, connected before the action that sets the signal off, as with qCoro:
//   auto ended = nextSignal(&chats, &ChatController::turnEnded, kTurnTimeout);
//   chats.send(...);
//   const std::optional<ChatId> id = co_await std::move(ended);  // nullopt: the timeout came first
// The result is the signal's argument (a tuple of them for none or several), nullopt when the
// timeout or the sender's end came first. A negative timeout waits for the signal only.

#include <QCoreApplication>
#include <QObject>
#include <QTimer>

#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace next_signal_detail {

template <typename... Args>
struct ValueOf {
  using type = std::tuple<std::decay_t<Args>...>;
};
template <typename Arg>
struct ValueOf<Arg> {
  using type = std::decay_t<Arg>;
};

}  // namespace next_signal_detail

template <typename Value>
class NextSignal {
  struct State {
    std::coroutine_handle<> waiting;  // set while a coroutine is suspended on it
    std::optional<Value> result;
    bool settled = false;  // the signal, the timeout or the sender's end came (the first counts)
    QMetaObject::Connection signal, destroyed;
  };

 public:
  template <typename T, typename... Args>
  NextSignal(T* sender, void (T::*signal)(Args...), std::chrono::milliseconds timeout) : state_(std::make_shared<State>()) {
    const std::weak_ptr<State> weak = state_;
    if (!sender) {
      state_->settled = true;
      return;
    }
    state_->signal = QObject::connect(
        sender, signal, sender,
        [weak](Args... args) {
          if (const std::shared_ptr<State> s = weak.lock(); s && !s->settled) {
            s->result.emplace(std::forward<Args>(args)...);
            settle(s);
          }
        },
        Qt::DirectConnection);
    state_->destroyed = QObject::connect(sender, &QObject::destroyed, QCoreApplication::instance(), [weak] {
      if (const std::shared_ptr<State> s = weak.lock(); s && !s->settled) settle(s);
    });
    if (timeout.count() >= 0)
      QTimer::singleShot(timeout, QCoreApplication::instance(), [weak] {
        if (const std::shared_ptr<State> s = weak.lock(); s && !s->settled) settle(s);
      });
  }

  bool await_ready() const noexcept { return state_->settled; }
  void await_suspend(std::coroutine_handle<> waiting) noexcept { state_->waiting = waiting; }
  std::optional<Value> await_resume() { return std::move(state_->result); }

 private:
  static void settle(const std::shared_ptr<State>& s) {
    s->settled = true;
    QObject::disconnect(s->signal);
    QObject::disconnect(s->destroyed);
    if (!s->waiting) return;  // not awaited yet: await_ready will say so
    const std::weak_ptr<State> weak = s;
    QMetaObject::invokeMethod(
        QCoreApplication::instance(),
        [weak] {
          if (const std::shared_ptr<State> st = weak.lock())
            if (const std::coroutine_handle<> h = std::exchange(st->waiting, {})) h.resume();
        },
        Qt::QueuedConnection);
  }

  std::shared_ptr<State> state_;  // shared with nothing: the callbacks hold it weakly
};

template <typename T, typename... Args>
NextSignal<typename next_signal_detail::ValueOf<Args...>::type> nextSignal(T* sender, void (T::*signal)(Args...),
                                                                           std::chrono::milliseconds timeout) {
  return {sender, signal, timeout};
}
