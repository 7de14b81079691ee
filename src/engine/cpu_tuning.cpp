// parse_cpu_tuning: the text form of CpuTuning ("isa=avx2,repack=none"), for the CLI's
// --cpu-tuning and A/B scripts. The values are checked here; the level name is checked again
// (against the levels this build knows) when the model is built.
#include <charconv>
#include <string>

#include "geniex/geniex.hpp"

namespace geniex {
namespace {

template <typename T>
bool parse_number(std::string_view v, T& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && !v.empty();
}

Status bad(std::string_view key, std::string_view value, std::string_view want) {
  return invalid_argument("cpu tuning: " + std::string(key) + "='" + std::string(value) +
                          "': expected " + std::string(want));
}

}  // namespace

Result<CpuTuning> parse_cpu_tuning(std::string_view spec) {
  CpuTuning t;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument("cpu tuning: '" + std::string(item) + "' is not key=value");
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "isa") {
      t.isa = std::string(value);
    } else if (key == "repack") {
      if (value == "default") {
        t.repack = CpuTuning::Repack::kDefault;
      } else if (value == "none") {
        t.repack = CpuTuning::Repack::kNone;
      } else if (value == "all") {
        t.repack = CpuTuning::Repack::kAll;
      } else {
        return bad(key, value, "default, none or all");
      }
    } else if (key == "huge_pages") {
      if (value != "0" && value != "1") return bad(key, value, "0 or 1");
      t.huge_pages = value == "1";
    } else if (key == "prefetch") {
      if (!parse_number(value, t.gemv_prefetch_bytes) || t.gemv_prefetch_bytes < 0) {
        return bad(key, value, "a byte count");
      }
    } else if (key == "streams") {
      if (!parse_number(value, t.gemv_streams) || t.gemv_streams < 1 || t.gemv_streams > 4) {
        return bad(key, value, "1..4");
      }
    } else {
      return invalid_argument("cpu tuning: unknown key '" + std::string(key) +
                              "' (isa, repack, huge_pages, prefetch, streams)");
    }
  }
  return t;
}

}  // namespace geniex
