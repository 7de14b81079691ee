// Admission control: slots, the bounded FIFO queue, immediate refusal,
// close() on shutdown.
#include "server/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace geniex::server {
namespace {

using namespace std::chrono_literals;

TEST(Admission, SlotsThenQueueThenRefusal) {
  Admission a(2, 1);
  Admission::Slot s1, s2, s3, s4;
  EXPECT_EQ(a.acquire(s1), Admission::Outcome::kAdmitted);
  EXPECT_EQ(a.acquire(s2), Admission::Outcome::kAdmitted);
  EXPECT_EQ(a.in_flight(), 2);
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    EXPECT_EQ(a.acquire(s3), Admission::Outcome::kAdmitted);
    got = true;
  });
  while (a.queued() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(a.acquire(s4), Admission::Outcome::kQueueFull);  // immediately
  EXPECT_FALSE(got.load());
  s1.release();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(a.in_flight(), 2);
  EXPECT_EQ(a.queued(), 0);
  s2 = Admission::Slot();  // move-assign releases
  s3.release();
  EXPECT_EQ(a.in_flight(), 0);
}

TEST(Admission, CloseRefusesAndWakesTheQueue) {
  Admission a(1, 4);
  Admission::Slot s1, s2, s3;
  ASSERT_EQ(a.acquire(s1), Admission::Outcome::kAdmitted);
  Admission::Outcome waited = Admission::Outcome::kAdmitted;
  std::thread waiter([&] { waited = a.acquire(s2); });
  while (a.queued() == 0) std::this_thread::sleep_for(1ms);
  a.close();
  waiter.join();
  EXPECT_EQ(waited, Admission::Outcome::kClosed);
  EXPECT_FALSE(s2.held());
  EXPECT_EQ(a.acquire(s3), Admission::Outcome::kClosed);
  s1.release();
  EXPECT_EQ(a.in_flight(), 0);
}

TEST(Admission, QueueIsFifo) {
  Admission a(1, 8);
  Admission::Slot first;
  ASSERT_EQ(a.acquire(first), Admission::Outcome::kAdmitted);
  std::vector<int> order;
  std::mutex mu;
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&, i] {
      Admission::Slot s;
      ASSERT_EQ(a.acquire(s), Admission::Outcome::kAdmitted);
      std::lock_guard lock(mu);
      order.push_back(i);
    });
    while (a.queued() != i + 1) std::this_thread::sleep_for(1ms);
  }
  first.release();
  for (auto& t : ts) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace geniex::server
