#include "core/thread_pool.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
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

TEST(ThreadPool, MoreThreadsThanCoresLoseNoTask) {
  // Oversubscribed (more threads than this machine has cores): workers wake late, in the middle
  // of a loop or after it ended, and must neither miss a task nor run one twice.
  ThreadPool pool(8);
  std::atomic<int> used[8] = {};
  for (int i = 0; i < 5000; ++i) {
    const int64_t n = i % 13 + 2;
    std::atomic<int64_t> sum{0};
    std::atomic<int> in_task[8] = {};
    std::atomic<int> overlap{0};
    pool.parallel_for(n, [&](int64_t t, int th) {
      if (in_task[th].fetch_add(1) != 0) overlap.fetch_add(1);  // one task at a time per thread
      used[th].store(1);
      volatile int spin = 0;  // long enough that sleeping workers wake and join in
      for (int k = 0; k < 2000; ++k) spin = spin + 1;
      sum.fetch_add(t + 1);
      in_task[th].fetch_sub(1);
    });
    ASSERT_EQ(sum.load(), n * (n + 1) / 2) << "loop " << i;
    ASSERT_EQ(overlap.load(), 0) << "loop " << i;
  }
  int threads_used = 0;
  for (auto& u : used) threads_used += u.load();
  EXPECT_GT(threads_used, 1) << "the workers never took part";
}

// Each thread starts on its own block of consecutive tasks, the same block loop after loop, so
// the rows a thread wrote in one op are the rows it reads in the next. Each thread's first task
// waits until every thread has started one, so no thread can take another's block first.
TEST(ThreadPool, EachThreadStartsOnItsOwnBlockInEveryLoop) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {int64_t{12}, int64_t{7}}) {
      for (int loop = 0; loop < 20; ++loop) {
        std::vector<std::atomic<int64_t>> first(static_cast<size_t>(threads));
        for (auto& f : first) f.store(-1);
        std::atomic<int> started{0};
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, [&](int64_t t, int th) {
          hits[static_cast<size_t>(t)].fetch_add(1);
          if (first[static_cast<size_t>(th)].load() >= 0) return;
          first[static_cast<size_t>(th)].store(t);
          started.fetch_add(1);
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (started.load() < threads && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
          }
        });
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
        for (int th = 0; th < threads; ++th) {
          EXPECT_EQ(first[static_cast<size_t>(th)].load(), th * n / threads)
              << threads << " threads, " << n << " tasks, loop " << loop << ", thread " << th;
        }
      }
    }
  }
}

// A thread whose block is done takes tasks from the others' blocks: one thread held up in its
// first task, the other runs everything else.
TEST(ThreadPool, AThreadOutOfTasksTakesFromTheOthersBlocks) {
  ThreadPool pool(2);
  std::atomic<bool> release{false};
  std::atomic<int> by_caller{0};
  std::atomic<int> started_worker{0};
  std::vector<std::atomic<int>> hits(40);
  pool.parallel_for(40, [&](int64_t t, int th) {
    hits[static_cast<size_t>(t)].fetch_add(1);
    if (th == 1 && started_worker.fetch_add(1) == 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!release.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
      return;
    }
    if (th == 0 && by_caller.fetch_add(1) + 1 == 39) release.store(true);
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  // The worker may not have woken before the caller took all 40; else it held exactly one.
  EXPECT_GE(by_caller.load(), 39);
}

// A worker held in a signal handler stands for one the OS has not scheduled (other programs
// hold the cores).
std::atomic<bool> g_parked{false};
std::atomic<bool> g_release{false};

extern "C" void park_here(int) {
  g_parked.store(true);
  while (!g_release.load()) {
    const timespec ms{0, 1000 * 1000};
    nanosleep(&ms, nullptr);
  }
}

TEST(ThreadPool, ALoopDoesNotWaitForAWorkerThatNeverWokeUp) {
  ThreadPool pool(3);
  // Learn which OS thread is which pool thread: three tasks that wait for each other, so each
  // thread takes exactly one.
  pthread_t ids[3];
  std::atomic<int> arrived{0};
  pool.parallel_for(3, [&](int64_t, int th) {
    ids[th] = pthread_self();
    arrived.fetch_add(1);
    while (arrived.load() < 3) std::this_thread::yield();
  });
  struct sigaction sa = {};
  sa.sa_handler = park_here;
  sigemptyset(&sa.sa_mask);
  struct sigaction old = {};
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  g_release.store(false);
  g_parked.store(false);
  ASSERT_EQ(pthread_kill(ids[1], SIGUSR1), 0);
  while (!g_parked.load()) std::this_thread::yield();

  // Thread 1 cannot run. The loop must still finish, on threads 0 and 2.
  std::vector<std::atomic<int>> hits(200);
  std::atomic<int> on_parked{0};
  auto loop = std::async(std::launch::async, [&] {
    pool.parallel_for(200, [&](int64_t t, int th) {
      hits[static_cast<size_t>(t)].fetch_add(1);
      if (th == 1) on_parked.fetch_add(1);
    });
  });
  const bool finished = loop.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  g_release.store(true);  // let the worker go either way, so the test can end
  loop.wait();
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(finished) << "parallel_for waited for a worker that had claimed no task";
  EXPECT_EQ(on_parked.load(), 0);
  for (size_t t = 0; t < hits.size(); ++t) EXPECT_EQ(hits[t].load(), 1) << t;

  // Released, the worker takes part again: three tasks that need three threads.
  arrived.store(0);
  std::atomic<int> seen_mask{0};
  pool.parallel_for(3, [&](int64_t, int th) {
    seen_mask.fetch_or(1 << th);
    arrived.fetch_add(1);
    while (arrived.load() < 3) std::this_thread::yield();
  });
  EXPECT_EQ(seen_mask.load(), 7);
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

// A starter that starts `limit` real threads (counting those that have exited) and then
// fails, as the system does past its thread limit.
struct LimitedStarter {
  int limit;
  std::atomic<int> started{0};
  std::atomic<int> exited{0};
  ThreadStarter starter() {
    return [this](std::function<void()> body) -> Result<std::thread> {
      if (started.load() >= limit) return resource_exhausted("thread limit reached");
      started.fetch_add(1);
      return std::thread([this, body = std::move(body)] {
        body();
        exited.fetch_add(1);
      });
    };
  }
};

TEST(ThreadPool, CreateJoinsTheStartedWorkersWhenTheSystemRefusesAThread) {
  LimitedStarter limit{3};
  auto pool = ThreadPool::create(8, limit.starter());
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(pool.status().message().find("started 4 of 8 threads"), std::string::npos)
      << pool.status().message();
  EXPECT_EQ(limit.started.load(), 3);
  EXPECT_EQ(limit.exited.load(), 3);  // joined, not left running (or terminating the process)
}

TEST(ThreadPool, APoolThatGotFewerThreadsStillRunsEveryTask) {
  LimitedStarter limit{2};
  {
    ThreadPool pool(8, limit.starter());
    EXPECT_EQ(pool.size(), 3);  // the caller and the two workers that started
    std::vector<std::atomic<int>> hits(100);
    std::atomic<int> bad_thread{0};
    pool.parallel_for(100, [&](int64_t t, int th) {
      hits[static_cast<size_t>(t)].fetch_add(1);
      if (th < 0 || th >= 3) bad_thread.fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_EQ(bad_thread.load(), 0);
  }
  EXPECT_EQ(limit.exited.load(), 2);
}

TEST(ThreadPool, CreateRefusesAbsurdThreadCounts) {
  for (int n : {0, -1, ThreadPool::kMaxThreads + 1, 1000000}) {
    auto pool = ThreadPool::create(n);
    ASSERT_FALSE(pool.ok()) << n;
    EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  }
  auto pool = ThreadPool::create(3);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  EXPECT_EQ((*pool)->size(), 3);
}

}  // namespace
}  // namespace geniex
