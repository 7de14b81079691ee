#include "core/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>
#include <thread>

namespace geniex {
namespace {

std::optional<long long> parse_ll(std::string_view s) {
  long long v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

std::optional<int> cgroup_cpus() {
  if (const std::string v2 = first_line("/sys/fs/cgroup/cpu.max"); !v2.empty()) {
    return cpus_of_cgroup_max(v2);
  }
  const std::string q = first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const std::string p = first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  const auto quota = parse_ll(q);
  const auto period = parse_ll(p);
  if (!quota || !period) return std::nullopt;
  return cpus_of_cfs_quota(*quota, *period);
}

}  // namespace

std::optional<int> cpus_of_cgroup_max(std::string_view cpu_max) {
  while (!cpu_max.empty() && (cpu_max.back() == '\n' || cpu_max.back() == ' ')) {
    cpu_max.remove_suffix(1);
  }
  const size_t sp = cpu_max.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto quota = parse_ll(cpu_max.substr(0, sp));  // "max" -> nullopt: no quota
  const auto period = parse_ll(cpu_max.substr(sp + 1));
  if (!quota || !period) return std::nullopt;
  return cpus_of_cfs_quota(*quota, *period);
}

std::optional<int> cpus_of_cfs_quota(long long quota_us, long long period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  const long long n = (quota_us + period_us - 1) / period_us;
  return static_cast<int>(std::min<long long>(std::max<long long>(n, 1), 1 << 16));
}

int usable_cpus() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int in_mask = CPU_COUNT(&set);
    if (in_mask > 0) n = in_mask;
  }
  if (const auto quota = cgroup_cpus(); quota && *quota < n) n = *quota;
  return n < 1 ? 1 : n;
}

}  // namespace geniex
