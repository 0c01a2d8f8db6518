#pragma once
// A fixed pool of worker threads for data-parallel loops in the forward pass.
// parallel_for is called hundreds of times per decoded token, so idle workers spin briefly on
// an atomic generation counter (then yield, then sleep): a condition-variable wake-up alone
// costs as much as the work of a small matmul. The calling thread takes part in the work, and
// waits for tasks to be done, not for workers to check in: on a busy machine a worker that is
// not scheduled in time simply takes no task, instead of stalling the step.

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
  // num_threads counts the caller; 0 means all hardware threads. Throws Error if the threads
  // cannot be started.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for task in [0, num_tasks), tasks handed out dynamically; returns when all
  // are done. fn must not throw (the forward pass reports errors before it starts) and must
  // not call parallel_for itself. Called from one thread at a time.
  void parallel_for(int64_t num_tasks, const std::function<void(int64_t)>& fn);

  static int default_num_threads();

 private:
  struct Job {
    const std::function<void(int64_t)>* fn = nullptr;
    int64_t num_tasks = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
  };
  static void run_tasks(Job& job);
  void worker_loop();
  void stop_workers();

  std::vector<std::thread> workers_;
  std::atomic<Job*> job_{nullptr};     // the job in progress, null between jobs
  std::atomic<int> holding_job_{0};    // workers that may be reading *job_
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleeping_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace pagedchat
