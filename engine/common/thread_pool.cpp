// The forward pass's thread pool: job hand-out, idle spinning, and the sleep/wake handshake.
#include "engine/common/thread_pool.h"

#include <chrono>
#include <system_error>

#include "engine/common/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define PC_CPU_RELAX() _mm_pause()
#else
#define PC_CPU_RELAX() std::this_thread::yield()
#endif

namespace pagedchat {
namespace {
// Idle workers: pause-spin this many rounds (a few tens of microseconds, longer than the gap
// between two matmuls of a decode step), then yield for up to kYieldFor (other processes get
// the core), then sleep until woken.
constexpr int kSpinRounds = 2000;
constexpr auto kYieldFor = std::chrono::milliseconds(2);

// Waits until pred() holds: pause-spin first, then yield so a descheduled peer can run.
template <typename Pred>
void wait_until(Pred pred) {
  for (int i = 0; !pred(); ++i) {
    if (i < 256) {
      PC_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
}
}  // namespace

int ThreadPool::default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = default_num_threads();
  try {
    for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    stop_workers();
    throw Error(format("cannot start %d threads: %s", num_threads, e.what()));
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks(Job& job) {
  for (;;) {
    int64_t task = job.next.fetch_add(1, std::memory_order_relaxed);
    if (task >= job.num_tasks) return;
    (*job.fn)(task);
    job.done.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
  if (num_tasks <= 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  Job job;
  job.fn = &fn;
  job.num_tasks = num_tasks;
  job_.store(&job);
  generation_.fetch_add(1);  // seq_cst: pairs with the sleepers' check in worker_loop
  if (sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_tasks(job);
  wait_until([&] { return job.done.load(std::memory_order_acquire) == num_tasks; });
  // The job lives on this stack: retract it, then let any worker still holding it let go.
  job_.store(nullptr);
  wait_until([&] { return holding_job_.load() == 0; });
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;  // not a fresh read: a job posted before this thread ran is still new
  for (;;) {
    uint64_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) {
      int spins = 0;
      auto yield_until = std::chrono::steady_clock::time_point::max();
      while ((now = generation_.load(std::memory_order_acquire)) == seen) {
        if (++spins < kSpinRounds) {
          PC_CPU_RELAX();
          continue;
        }
        if (yield_until == std::chrono::steady_clock::time_point::max())
          yield_until = std::chrono::steady_clock::now() + kYieldFor;
        if (spins % 64 != 0 || std::chrono::steady_clock::now() < yield_until) {
          std::this_thread::yield();
          continue;
        }
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleeping_.fetch_sub(1);
      }
    }
    seen = now;
    if (stop_.load()) return;
    holding_job_.fetch_add(1);
    if (Job* job = job_.load()) run_tasks(*job);
    holding_job_.fetch_sub(1);
  }
}

}  // namespace pagedchat
