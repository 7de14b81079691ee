#include "human_units.h"

#include <cinttypes>
#include <cstdio>
#include <iterator>

namespace geniex::cli {

std::string human_bytes(uint64_t n, int decimals) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", u == 0 ? 0 : decimals, v, units[u]);
  return buf;
}

std::string human_count(uint64_t n, int decimals) {
  char buf[48];
  const auto v = static_cast<double>(n);
  if (n >= 1000000000) {
    std::snprintf(buf, sizeof buf, "%.*fB", decimals, v / 1e9);
  } else if (n >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.*fM", decimals, v / 1e6);
  } else if (n >= 1000) {
    std::snprintf(buf, sizeof buf, "%.*fK", decimals, v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRIu64, n);
  }
  return buf;
}

}  // namespace geniex::cli
