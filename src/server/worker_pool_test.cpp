// The worker pool runs every posted task, several at once, and finishes them before joining.
#include "server/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace geniex::server {
namespace {

TEST(WorkerPool, RunsEveryTaskBeforeJoining) {
  std::atomic<int> done{0};
  {
    WorkerPool pool(3);
    for (int i = 0; i < 100; ++i) pool.post([&] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 100);
}

TEST(WorkerPool, ABlockedTaskDoesNotBlockTheOthers) {
  std::atomic<bool> release{false};
  std::atomic<bool> other{false};
  WorkerPool pool(2);
  pool.post([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  pool.post([&] { other = true; });
  for (int i = 0; i < 2000 && !other.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(other.load());
  release = true;
}

}  // namespace
}  // namespace geniex::server
