// "1,2,8" -> {1, 2, 8}: the comma-separated integer lists of the bench tools' flags.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace geniex::bench {

inline std::vector<int> parse_int_list(const char* s) {
  std::vector<int> v;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) v.push_back(std::atoi(cur.c_str()));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return v;
}

}  // namespace geniex::bench
