// ThreadPool: a fixed set of workers that run one parallel loop at a time. The caller's thread
// takes part, so a pool of n threads starts n - 1 workers. Workers spin briefly between loops
// (decode runs hundreds of small loops per token) and then sleep (C++20 atomic wait: a futex,
// with no system call on the way when nobody sleeps).
//
// Each thread starts a loop on a block of its own, the same block of every loop of the same size:
// loops over the rows of one batch give each thread the same rows from op to op, so what a thread
// wrote stays in its caches for the next op (between cores on different dies, a row read from
// the other's cache costs ~6x a local one). A thread out of tasks takes from the others' blocks.
//
// A loop waits only for the tasks that were claimed, never for a worker that has not woken up:
// when other programs hold the cores, a descheduled worker is simply left out of that loop
// instead of stalling it for a time slice (see parallel_for).
//
// Starting a thread can fail (a process or cgroup thread limit): the pool then joins the
// workers that did start instead of leaving joinable threads behind (std::terminate), and
// create() reports it as a Status.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "core/status.h"

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

/// Starts one thread running `body`, or says why the system would not. The default wraps
/// std::thread, whose constructor throws std::system_error (EAGAIN past the thread limit);
/// tests pass one that fails on purpose.
using ThreadStarter = std::function<Result<std::thread>(std::function<void()> body)>;

class ThreadPool {
 public:
  /// The most threads a pool takes, the caller included: above the hardware threads of the
  /// largest machines (two 192-core sockets have 768) and far below where a thread count stops
  /// being a setting and becomes a way to exhaust the process (a stack reservation each).
  static constexpr int kMaxThreads = 1024;

  /// A pool of exactly `n_threads` in [1, kMaxThreads], or kInvalidArgument outside that range,
  /// or kResourceExhausted when the system refuses a thread (the ones that started are stopped
  /// and joined first). `start` starts the workers (default: std::thread).
  static Result<std::unique_ptr<ThreadPool>> create(int n_threads, const ThreadStarter& start = {});

  /// A pool of `n_threads` (values < 1 become 1, values > kMaxThreads become kMaxThreads), the
  /// caller included. If the system refuses a thread, the pool runs with the workers that did
  /// start (size() says how many); create() treats that as an error instead.
  explicit ThreadPool(int n_threads, const ThreadStarter& start = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Calls fn(task, thread) for every task in [0, n_tasks), spread over the threads; returns
  /// when all are done. `thread` is in [0, size()), and one thread runs its tasks one after
  /// another, so per-thread scratch indexed by `thread` is safe. Thread t starts at the t-th of
  /// size() equal blocks of consecutive tasks and claims them in order; a thread whose block is
  /// done claims from the others' blocks, so uneven tasks balance, and a worker that wakes late
  /// joins in or finds nothing left: the caller never waits for a worker that has claimed no
  /// task. Not reentrant: fn must not call parallel_for on the same pool.
  void parallel_for(int64_t n_tasks, TaskRef fn);

  /// Number of threads, the caller included.
  [[nodiscard]] int size() const { return n_threads_; }

  /// A sensible default: the CPUs this process may use (affinity mask and cgroup quota), at
  /// most kMaxThreads.
  static int default_threads();

 private:
  /// One loop as the workers see it. Two slots, used by alternate loops, so a worker that read
  /// an old loop's state can only fail its claim (below), never run a task of the wrong loop.
  struct Loop {
    std::atomic<const TaskRef*> fn{nullptr};
    std::atomic<int64_t> n_tasks{0};
  };

  /// Where the next task of one thread's block is claimed: (loop number << 32) | next task. A
  /// claim is a compare-exchange on the whole word, so it succeeds only while that loop is still
  /// the current one. A cache line each: the owner's claims stay in its core.
  struct alignas(64) Block {
    std::atomic<uint64_t> claim{0};
  };

  void worker(int index);
  /// Claims and runs tasks of whichever loop is current, its own block first, until none is
  /// left; then adds what it ran to finished_.
  void run_tasks(int thread);
  /// Claims the next task of block b if the current loop has one there (true, the claimed word
  /// in c).
  bool claim(int b, uint64_t& c);
  /// One loop of at most 2^32 - 1 tasks.
  void run_loop(int64_t n_tasks, const TaskRef& fn);

  int n_threads_ = 1;
  Status start_error_;  ///< why fewer threads than asked for started (OK when all did)
  std::vector<std::thread> workers_;
  Loop loops_[2];
  std::unique_ptr<Block[]> blocks_;               ///< one per thread
  alignas(64) std::atomic<int64_t> finished_{0};  ///< tasks of the current loop that returned
  uint32_t loop_number_ = 0;                      ///< written by the caller's thread only
  // What sleepers wait on. Adjacent on purpose: libstdc++ keys its waiter table by address / 4,
  // so the two never share an entry (which would turn every notify into a system call).
  std::atomic<uint32_t> published_{0};  ///< the latest loop number; workers sleep on it
  std::atomic<uint32_t> done_{0};       ///< the latest finished loop; the caller sleeps on it
  std::atomic<bool> stop_{false};
};

}  // namespace geniex
