#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace geniex {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.parallel_for(n, [&](int64_t t, int th) {
        hits[static_cast<size_t>(t)].fetch_add(1);
        if (th < 0 || th >= threads) bad_thread.fetch_add(1);
      });
      for (int64_t t = 0; t < n; ++t) EXPECT_EQ(hits[static_cast<size_t>(t)].load(), 1) << t;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ManySmallLoopsInARow) {
  // Decode issues hundreds of tiny loops per token: none may be lost or overlap.
  ThreadPool pool(4);
  int64_t total = 0;
  for (int i = 0; i < 2000; ++i) {
    std::atomic<int64_t> sum{0};
    pool.parallel_for(i % 5 + 1, [&](int64_t t, int) { sum.fetch_add(t + 1); });
    const int64_t n = i % 5 + 1;
    ASSERT_EQ(sum.load(), n * (n + 1) / 2) << "loop " << i;
    total += sum.load();
  }
  EXPECT_GT(total, 0);
}

TEST(ThreadPool, ZeroOrNegativeThreadsMeansOne) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  int calls = 0;
  pool.parallel_for(3, [&](int64_t, int th) {
    EXPECT_EQ(th, 0);
    ++calls;
  });
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace geniex
