// Open connections per client address and in total: refusal at each limit, release on ticket
// destruction.
#include "server/connection_limits.h"

#include <gtest/gtest.h>

#include <vector>

namespace geniex::server {
namespace {

TEST(ConnectionLimits, PerClientThenTotal) {
  ConnectionLimits c(2, 3);
  ConnectionLimits::Ticket a1, a2, a3, b1, d1;
  EXPECT_EQ(c.open("a", a1), ConnectionLimits::Outcome::kAccepted);
  EXPECT_EQ(c.open("a", a2), ConnectionLimits::Outcome::kAccepted);
  EXPECT_EQ(c.open("a", a3), ConnectionLimits::Outcome::kClientFull);
  EXPECT_EQ(c.open("b", b1), ConnectionLimits::Outcome::kAccepted);
  EXPECT_EQ(c.open("d", d1), ConnectionLimits::Outcome::kTotalFull);
  EXPECT_EQ(c.open_total(), 3);
  EXPECT_EQ(c.open_from("a"), 2);
  a1.release();
  EXPECT_EQ(c.open_from("a"), 1);
  EXPECT_EQ(c.open("d", d1), ConnectionLimits::Outcome::kAccepted);
}

TEST(ConnectionLimits, TicketsReleaseOnDestructionAndMove) {
  ConnectionLimits c(1, 10);
  {
    ConnectionLimits::Ticket t;
    ASSERT_EQ(c.open("x", t), ConnectionLimits::Outcome::kAccepted);
    ConnectionLimits::Ticket moved(std::move(t));
    EXPECT_EQ(c.open_from("x"), 1);
  }
  EXPECT_EQ(c.open_from("x"), 0);
  EXPECT_EQ(c.open_total(), 0);
}

}  // namespace
}  // namespace geniex::server
