// How many CPUs this process may really use: the CPUs of its affinity mask (taskset, cpusets),
// capped by a cgroup CPU quota (docker --cpus, Kubernetes limits), at least 1.
#pragma once

#include <optional>
#include <string_view>

namespace geniex {

/// CPUs available to this process (affinity mask, then cgroup v2 `cpu.max` or v1
/// `cpu.cfs_quota_us` / `cpu.cfs_period_us`, rounded up); hardware threads if neither is known.
int usable_cpus();

/// The CPUs a cgroup v2 `cpu.max` line allows ("150000 100000" -> 2, "max 100000" -> none).
std::optional<int> cpus_of_cgroup_max(std::string_view cpu_max);

/// The CPUs a cgroup v1 quota and period allow (quota -1 -> none).
std::optional<int> cpus_of_cfs_quota(long long quota_us, long long period_us);

}  // namespace geniex
