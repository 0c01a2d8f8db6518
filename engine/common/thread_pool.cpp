#include "engine/common/thread_pool.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define PC_CPU_RELAX() _mm_pause()
#else
#define PC_CPU_RELAX() std::this_thread::yield()
#endif

namespace pagedchat {
namespace {
// How long a worker spins waiting for the next job before it sleeps (iterations of pause,
// roughly 50-100 microseconds): longer than the gap between two matmuls of a decode step.
constexpr int kSpinIterations = 20000;
}  // namespace

int ThreadPool::default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = default_num_threads();
  // Workers start from generation 0, not from whatever they read when they first run: a job
  // posted before a worker is scheduled must still be seen as new.
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(0); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks() {
  for (;;) {
    int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) break;
    (*job_)(task);
  }
}

void ThreadPool::parallel_for(int64_t num_tasks, const std::function<void(int64_t)>& fn) {
  if (num_tasks <= 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t);
    return;
  }
  job_ = &fn;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: pairs with the sleeper's check below
  if (sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_.notify_all();
  }
  run_tasks();
  while (busy_workers_.load(std::memory_order_acquire) > 0) PC_CPU_RELAX();
  job_ = nullptr;
}

void ThreadPool::worker_loop(uint64_t seen) {
  for (;;) {
    int spins = 0;
    uint64_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        PC_CPU_RELAX();
        continue;
      }
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleeping_.fetch_sub(1, std::memory_order_acq_rel);
      spins = 0;
    }
    seen = now;
    if (stop_.load()) return;
    run_tasks();
    busy_workers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace pagedchat
