// A small pool of worker threads for the CPU backend: run(n, task) calls task(i) for every
// i < n on the calling thread and the workers, and returns when all calls have returned.
// Waiting threads spin for a few microseconds, then sleep on a condition variable, so a thread
// that waits never keeps a core from another process (OpenMP's spinning barriers did).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace attnviz {

// The cores this process may use: the CPUs of its affinity mask counted once per physical core
// (SMT siblings share one core's arithmetic units), capped by a cgroup CPU quota. At least 1.
int availableCores();

class ThreadPool {
 public:
  // threads >= 1: the calling thread plus threads − 1 workers. A waiting thread spins for at
  // most spin_us microseconds before it sleeps (0: sleep at once).
  explicit ThreadPool(int threads, int spin_us = kDefaultSpinUs);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return (int)workers_.size() + 1; }

  // Calls task(i) once for each i in [0, n) (n <= kMaxTasks), on the caller and the workers;
  // returns when every call has returned. Tasks are claimed one at a time, so a thread that the
  // system preempts simply takes fewer; how the work is cut into tasks is the caller's choice,
  // so results never depend on which thread ran which task. Tasks must not throw. A call made
  // while the pool is busy (from inside a task, or from a second thread) runs its tasks on the
  // calling thread, in order.
  template <class F>
  void run(int64_t n, F&& task) {
    using Fn = std::remove_reference_t<F>;
    runErased(
        n, [](void* f, int64_t i) { (*static_cast<Fn*>(f))(i); },
        const_cast<void*>(static_cast<const void*>(&task)));
  }

  static constexpr int64_t kMaxTasks = (int64_t{1} << 20) - 1;
  static constexpr int kDefaultSpinUs = 50;

 private:
  using Call = void (*)(void*, int64_t);
  void runErased(int64_t n, Call call, void* ctx);
  void workerLoop();
  void work(uint64_t generation);  // claims and runs tasks of that generation until none is left

  // The job: one 64-bit word holds generation (24 bits) | task count (20) | next task (20), so a
  // claim (compare-exchange) can never take a task of a job other than the one it saw.
  std::atomic<uint64_t> job_{0};
  std::atomic<int64_t> done_{0};  // tasks of the current job that have returned
  Call call_ = nullptr;           // the current job's task; valid while one of its tasks is held
  void* ctx_ = nullptr;

  std::atomic<bool> busy_{false};  // a run() is in progress
  std::atomic<int> sleepers_{0};   // workers asleep on wake_
  std::atomic<bool> caller_asleep_{false};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;  // a new job (or stop) for the workers
  std::condition_variable idle_;  // the current job is done, for the caller
  int spin_us_;
  std::vector<std::thread> workers_;
};

}  // namespace attnviz
