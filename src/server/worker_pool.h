// A fixed set of threads that run posted tasks in order: where geniex serve runs route
// handlers, so the transport's I/O threads never block on a generation.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace geniex::server {

class WorkerPool {
 public:
  /// Starts `n_threads` (at least 1).
  explicit WorkerPool(size_t n_threads);
  /// Runs what was posted, then joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `task` (FIFO). The queue is bounded by the callers: the transport posts at most one
  /// task per open connection, and connections are capped.
  void post(std::function<void()> task);

 private:
  void work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace geniex::server
