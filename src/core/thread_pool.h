// ThreadPool: a fixed set of workers that run one parallel loop at a time. The caller's thread
// takes part, so a pool of n threads starts n - 1 workers. Workers spin briefly between loops
// (decode runs hundreds of small loops per token) and then sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace geniex {

/// A non-owning reference to a callable `void(int64_t task, int thread)`: what parallel_for
/// takes, so that passing a lambda never allocates (std::function would, for big captures).
/// The callable must outlive the call it is passed to.
class TaskRef {
 public:
  template <typename F>
  TaskRef(const F& f)  // NOLINT(google-explicit-constructor): lambdas convert implicitly
      : obj_(&f),
        call_([](const void* o, int64_t t, int th) { (*static_cast<const F*>(o))(t, th); }) {}
  void operator()(int64_t task, int thread) const { call_(obj_, task, thread); }

 private:
  const void* obj_;
  void (*call_)(const void*, int64_t, int);
};

class ThreadPool {
 public:
  /// A pool of `n_threads` (>= 1; values < 1 become 1), the caller included.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Calls fn(task, thread) for every task in [0, n_tasks), spread over the threads; returns
  /// when all are done. `thread` is in [0, size()). Tasks are claimed dynamically, so uneven
  /// tasks balance. Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t n_tasks, TaskRef fn);

  /// Number of threads, the caller included.
  [[nodiscard]] int size() const { return n_threads_; }

  /// A sensible default: the number of hardware threads (at least 1).
  static int default_threads();

 private:
  void worker(int index);
  void run_tasks(int thread);

  int n_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_cv_;
  // Loop state, written under mu_ before generation_ is bumped.
  const TaskRef* fn_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};
  std::atomic<uint64_t> generation_{0};
  bool stop_ = false;
};

}  // namespace geniex
