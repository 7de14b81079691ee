#include "core/thread_pool.h"

#include <chrono>

namespace geniex {
namespace {
// How long a worker polls for the next loop before sleeping: long enough to bridge the gap
// between the small loops of one decode step, short enough not to burn a core when idle.
constexpr auto kSpin = std::chrono::microseconds(200);
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::run_tasks(int thread) {
  const auto& fn = *fn_;
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    fn(t, thread);
  }
}

void ThreadPool::parallel_for(int64_t n_tasks, TaskRef fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_tasks_ = n_tasks;
    next_.store(0, std::memory_order_relaxed);
    active_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_tasks(0);
  // Wait for the workers to finish their last task (spin first, then sleep).
  const auto until = std::chrono::steady_clock::now() + kSpin;
  while (active_.load(std::memory_order_acquire) != 0) {
    if (std::chrono::steady_clock::now() > until) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return active_.load(std::memory_order_acquire) == 0; });
      break;
    }
    std::this_thread::yield();
  }
  fn_ = nullptr;
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for a moment, then sleep until the generation changes.
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
    }
    run_tasks(index);
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

}  // namespace geniex
