#include "core/cpu_count.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace geniex {
namespace {

TEST(CpuCount, CgroupV2MaxLine) {
  EXPECT_EQ(cpus_of_cgroup_max("200000 100000\n"), 2);
  EXPECT_EQ(cpus_of_cgroup_max("150000 100000"), 2);  // 1.5 CPUs round up
  EXPECT_EQ(cpus_of_cgroup_max("50000 100000"), 1);
  EXPECT_EQ(cpus_of_cgroup_max("max 100000"), std::nullopt);
  EXPECT_EQ(cpus_of_cgroup_max("garbage"), std::nullopt);
  EXPECT_EQ(cpus_of_cgroup_max(""), std::nullopt);
}

TEST(CpuCount, CgroupV1Quota) {
  EXPECT_EQ(cpus_of_cfs_quota(-1, 100000), std::nullopt);
  EXPECT_EQ(cpus_of_cfs_quota(300000, 100000), 3);
  EXPECT_EQ(cpus_of_cfs_quota(1, 100000), 1);
}

TEST(CpuCount, FollowsTheAffinityMask) {
  cpu_set_t old;
  ASSERT_EQ(sched_getaffinity(0, sizeof(old), &old), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &old)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(usable_cpus(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(old), &old), 0);
  EXPECT_GE(usable_cpus(), 1);
}

}  // namespace
}  // namespace geniex
