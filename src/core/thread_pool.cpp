#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>
#include <utility>

#include "core/cpu_count.h"

namespace geniex {
namespace {
// How long a worker polls for the next loop before sleeping: long enough to bridge the gap
// between the small loops of one decode step, short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(200);
// Tasks per loop: the task index shares a 64-bit word with the loop number.
constexpr int64_t kMaxLoopTasks = 0xFFFFFFFFLL;

uint32_t loop_of(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
uint32_t task_of(uint64_t claim) { return static_cast<uint32_t>(claim); }

// std::thread reports a refused thread by throwing; this is where it becomes a Status.
Result<std::thread> start_std_thread(std::function<void()> body) {
  try {
    return std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return resource_exhausted(std::string("the system refused a new thread: ") + e.what());
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads, const ThreadStarter& start)
    : n_threads_(std::clamp(n_threads, 1, kMaxThreads)),
      blocks_(std::make_unique<Block[]>(static_cast<size_t>(n_threads_))) {
  const int wanted = n_threads_;
  workers_.reserve(static_cast<size_t>(wanted - 1));
  for (int i = 1; i < wanted; ++i) {
    auto body = [this, i] { worker(i); };
    Result<std::thread> t = start ? start(body) : start_std_thread(body);
    if (t.ok() && !t->joinable()) t = internal_error("the thread starter returned no thread");
    if (!t.ok()) {
      // Worker indices stay dense: the pool is the caller plus the workers that started.
      n_threads_ = i;
      start_error_ = Status(t.status().code(), "started " + std::to_string(i) + " of " +
                                                   std::to_string(wanted) +
                                                   " threads: " + t.status().message());
      break;
    }
    workers_.push_back(std::move(*t));
  }
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(int n_threads, const ThreadStarter& start) {
  if (n_threads < 1 || n_threads > kMaxThreads) {
    return invalid_argument("a thread pool takes 1 to " + std::to_string(kMaxThreads) +
                            " threads, not " + std::to_string(n_threads));
  }
  auto pool = std::make_unique<ThreadPool>(n_threads, start);
  if (!pool->start_error_.ok()) return pool->start_error_;  // ~ThreadPool joins what started
  return pool;
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  published_.store(published_.load() + 1);
  published_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() { return std::min(usable_cpus(), kMaxThreads); }

// Why a claim never runs a task of the wrong loop: the caller fills loops_[k & 1] for loop k,
// then sets every block's word to (k, first task of the block), then publishes k. A worker reads
// a block's word (loop j, task i), then slot j & 1, then compare-exchanges the word from (j, i)
// to (j, i + 1). That slot is refilled only for loop j + 2, after loop j + 1 was set in every
// block, and then no word holds (j, i) any more: a worker that read a refilled slot fails its
// compare-exchange. A successful claim keeps loop j unfinished, so its fn stays alive until the
// task returns. Loop j is finished only when every thread that ran one of its tasks has added
// its count, which it does before it returns from run_tasks, so no count of an older loop can
// reach finished_ after the caller reset it. All of these atomics are sequentially consistent.
bool ThreadPool::claim(int b, uint64_t& c) {
  std::atomic<uint64_t>& word = blocks_[static_cast<size_t>(b)].claim;
  c = word.load();
  for (;;) {
    const Loop& loop = loops_[loop_of(c) & 1];
    const int64_t n = loop.n_tasks.load();
    // The block's end: blocks are [b n / T, (b + 1) n / T); n < 2^32 and T <= 1024.
    const int64_t end = (b + 1) * n / n_threads_;
    if (loop.fn.load() == nullptr || static_cast<int64_t>(task_of(c)) >= end) return false;
    if (word.compare_exchange_weak(c, c + 1)) return true;  // else c holds the fresh value
  }
}

void ThreadPool::run_tasks(int thread) {
  uint32_t counted_loop = 0;
  int64_t ran = 0;
  const auto add_ran = [&] {
    if (ran == 0) return;
    const int64_t n = loops_[counted_loop & 1].n_tasks.load();
    if (finished_.fetch_add(ran) + ran == n) {
      done_.store(counted_loop);
      done_.notify_one();
    }
    ran = 0;
  };
  // Own block first, then the others' in turn.
  for (int i = 0; i < n_threads_; ++i) {
    const int b = (thread + i) % n_threads_;
    uint64_t c = 0;
    while (claim(b, c)) {
      if (ran != 0 && loop_of(c) != counted_loop) add_ran();
      counted_loop = loop_of(c);
      const TaskRef* fn = loops_[counted_loop & 1].fn.load();
      (*fn)(static_cast<int64_t>(task_of(c)), thread);
      ++ran;
    }
  }
  add_ran();
}

void ThreadPool::run_loop(int64_t n_tasks, const TaskRef& fn) {
  const uint32_t k = ++loop_number_;
  Loop& loop = loops_[k & 1];
  loop.fn.store(&fn);
  loop.n_tasks.store(n_tasks);
  finished_.store(0);
  for (int b = 0; b < n_threads_; ++b) {
    const auto first = static_cast<uint64_t>(b * n_tasks / n_threads_);
    blocks_[static_cast<size_t>(b)].claim.store((static_cast<uint64_t>(k) << 32) | first);
  }
  published_.store(k);
  published_.notify_all();
  run_tasks(0);
  // Wait for tasks that workers claimed and still run (spin first, then sleep).
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (done_.load() != k && std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  for (uint32_t d = done_.load(); d != k; d = done_.load()) done_.wait(d);
}

void ThreadPool::parallel_for(int64_t n_tasks, TaskRef fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  for (int64_t first = 0; first < n_tasks; first += kMaxLoopTasks) {
    const int64_t count = std::min(kMaxLoopTasks, n_tasks - first);
    if (first == 0) {
      run_loop(count, fn);
    } else {
      const auto shifted = [&](int64_t t, int th) { fn(first + t, th); };
      run_loop(count, TaskRef(shifted));
    }
  }
}

void ThreadPool::worker(int index) {
  uint32_t seen = 0;
  for (;;) {
    // Spin for a moment, then sleep until a new loop is published.
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (published_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    published_.wait(seen);  // returns at once if it changed already
    seen = published_.load();
    if (stop_.load()) return;
    run_tasks(index);
  }
}

}  // namespace geniex
