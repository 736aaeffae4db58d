#include "compute/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sched.h>
#endif

namespace attnviz {

namespace {

// ---- how many cores ----

#if defined(__linux__)
// The first whole number in a file, or -1.
long readNumber(const std::string& path) {
  std::ifstream f(path);
  long v = -1;
  if (!(f >> v)) return -1;
  return v;
}

// A cgroup CPU quota in whole CPUs (rounded up), or 0 when there is none.
int cgroupCpuLimit() {
  // cgroup v2: "<quota> <period>" or "max <period>" in cpu.max of the process's cgroup.
  std::string path;
  {
    std::ifstream f("/proc/self/cgroup");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  for (const std::string& dir : {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
    std::ifstream f(dir + "/cpu.max");
    std::string quota;
    long period = 0;
    if (f >> quota >> period) {
      if (quota == "max" || period <= 0) return 0;
      const long q = std::atol(quota.c_str());
      return q > 0 ? (int)std::max<long>(1, (q + period - 1) / period) : 0;
    }
  }
  // cgroup v1.
  const long q = readNumber("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const long p = readNumber("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (q > 0 && p > 0) return (int)std::max<long>(1, (q + p - 1) / p);
  return 0;
}
#endif

// pause/yield: tells the core this is a spin loop (saves power, frees an SMT sibling).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until ready() or `us` microseconds have passed; true when ready.
template <class Ready>
bool spinFor(int us, Ready&& ready) {
  if (ready()) return true;
  if (us <= 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (unsigned i = 1;; ++i) {
    cpuRelax();
    if (ready()) return true;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// The job word: generation (24 bits) | task count (20 bits) | next task (20 bits).
constexpr uint64_t kTaskBits = 20, kTaskMask = (uint64_t{1} << kTaskBits) - 1;
constexpr uint64_t kGenerationMask = (uint64_t{1} << 24) - 1;
uint64_t generationOf(uint64_t job) {
  return job >> (2 * kTaskBits);
}
uint64_t countOf(uint64_t job) {
  return (job >> kTaskBits) & kTaskMask;
}
uint64_t nextOf(uint64_t job) {
  return job & kTaskMask;
}
uint64_t makeJob(uint64_t generation, uint64_t count) {
  return (generation << (2 * kTaskBits)) | (count << kTaskBits);
}

}  // namespace

int availableCores() {
  int n = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    std::set<std::pair<long, long>> cores;  // (package, core) of each CPU we may run on
    int cpus = 0;
    bool topology = true;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      ++cpus;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      const long package = readNumber(dir + "physical_package_id");
      const long core = readNumber(dir + "core_id");
      if (package < 0 || core < 0) topology = false;
      cores.insert({package, core});
    }
    n = topology ? (int)cores.size() : cpus;
  }
  if (const int limit = cgroupCpuLimit(); limit > 0 && (n == 0 || limit < n)) n = limit;
#endif
  if (n <= 0) n = (int)std::thread::hardware_concurrency();
  return std::max(n, 1);
}

ThreadPool::ThreadPool(int threads, int spin_us) : spin_us_(std::max(spin_us, 0)) {
  threads = std::max(threads, 1);
  workers_.reserve((size_t)threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::runErased(int64_t n, Call call, void* ctx) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || n > kMaxTasks || busy_.exchange(true)) {
    for (int64_t i = 0; i < n; ++i) call(ctx, i);
    return;
  }
  call_ = call;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = (generationOf(job_.load()) + 1) & kGenerationMask;
  job_.store(makeJob(generation, (uint64_t)n));  // publishes call_, ctx_ and done_ = 0
  // A worker going to sleep counts itself in sleepers_ and then looks at job_ (both seq_cst,
  // under mutex_); we stored job_ and then look at sleepers_: one of us sees the other.
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  work(generation);
  auto finished = [&] { return done_.load() == n; };
  if (!spinFor(spin_us_, finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_asleep_.store(true);
    idle_.wait(lock, finished);
    caller_asleep_.store(false);
  }
  busy_.store(false);
}

void ThreadPool::work(uint64_t generation) {
  uint64_t job = job_.load(std::memory_order_acquire);
  for (;;) {
    if (generationOf(job) != generation) return;
    const uint64_t count = countOf(job), next = nextOf(job);
    if (next >= count) return;
    if (!job_.compare_exchange_weak(job, job + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire))
      continue;
    // The task is ours: its job cannot finish (nor call_ change) until we count it done.
    call_(ctx_, (int64_t)next);
    if (done_.fetch_add(1) + 1 == (int64_t)count && caller_asleep_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.notify_one();
    }
    job = job_.load(std::memory_order_acquire);
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = generationOf(job_.load());
  for (;;) {
    auto wanted = [&] { return stop_.load() || generationOf(job_.load()) != seen; };
    if (!spinFor(spin_us_, wanted)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, wanted);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generationOf(job_.load(std::memory_order_acquire));
    work(seen);
  }
}

}  // namespace attnviz
