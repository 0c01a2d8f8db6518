#pragma once
// A fixed pool of worker threads for data-parallel loops in the forward pass.
// parallel_for is called hundreds of times per decoded token, so workers spin briefly on an
// atomic generation counter before sleeping: a condition-variable wake-up alone costs as much
// as the work of a small matmul. The calling thread takes part in the work.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pagedchat {

class ThreadPool {
 public:
  // num_threads counts the caller; 0 means all hardware threads.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for task in [0, num_tasks), tasks handed out dynamically; returns when all
  // are done. fn must not throw (the forward pass reports errors before it starts) and must
  // not call parallel_for itself.
  void parallel_for(int64_t num_tasks, const std::function<void(int64_t)>& fn);

  static int default_num_threads();

 private:
  void worker_loop(uint64_t seen);
  void run_tasks();

  std::vector<std::thread> workers_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t num_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<int> busy_workers_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleeping_{0};
};

}  // namespace pagedchat
