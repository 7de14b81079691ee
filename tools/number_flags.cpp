#include "number_flags.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <system_error>

namespace geniex::cli {
namespace {

Status bad(std::string_view flag, std::string_view text, const std::string& why) {
  return invalid_argument(std::string(flag) + " " + std::string(text) + ": " + why);
}

// Shortest text that reads back as `v` ("4", "0.001", "1e+30").
std::string format_real(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// The sign and digits of a number: leading '+' dropped (std::from_chars takes only '-').
std::string_view without_plus(std::string_view text) {
  if (!text.empty() && text[0] == '+' && text.size() > 1 && text[1] != '-') text.remove_prefix(1);
  return text;
}

}  // namespace

Result<int64_t> parse_count(std::string_view flag, std::string_view text, int64_t lo, int64_t hi) {
  const std::string_view digits = without_plus(text);
  int64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    return bad(flag, text,
               digits.starts_with('-') ? "too small (at least " + std::to_string(lo) + ")"
                                       : "too large (at most " + std::to_string(hi) + ")");
  }
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
    return bad(flag, text, "not a whole number");
  }
  if (v < lo) {
    return bad(flag, text,
               v < 0 && lo >= 0 ? "negative (must be >= " + std::to_string(lo) + ")"
                                : "too small (at least " + std::to_string(lo) + ")");
  }
  if (v > hi) return bad(flag, text, "too large (at most " + std::to_string(hi) + ")");
  return v;
}

Result<double> parse_real(std::string_view flag, std::string_view text, double lo, double hi) {
  const std::string_view digits = without_plus(text);
  double v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range) ||
      r.ptr != digits.data() + digits.size()) {
    return bad(flag, text, "not a number");
  }
  if (r.ec == std::errc::result_out_of_range) {
    // Beyond double: strtod says in which direction (HUGE_VAL, or a value that underflowed).
    v = std::strtod(std::string(digits).c_str(), nullptr);
  }
  if (std::isnan(v)) return bad(flag, text, "not a number");
  if (v < lo) {
    return bad(flag, text,
               v < 0 && lo >= 0 ? "negative (must be >= " + format_real(lo) + ")"
                                : "too small (at least " + format_real(lo) + ")");
  }
  if (v > hi) return bad(flag, text, "too large (at most " + format_real(hi) + ")");
  return v;
}

std::string format_size(int64_t bytes) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

Result<int64_t> parse_size(std::string_view flag, std::string_view text, int64_t max_bytes) {
  const std::string hint = "expected a size such as 512M or 2G";
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
  if (i == 0) {
    return bad(flag, text, text.starts_with('-') ? "negative (" + hint + ")" : hint);
  }
  std::string unit(text.substr(i));
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.ends_with("IB")) unit.resize(unit.size() - 2);
  if (unit.size() == 2 && unit[1] == 'B') unit.resize(1);
  if (unit == "B") unit.clear();
  int shift = 0;
  if (unit == "K") {
    shift = 10;
  } else if (unit == "M") {
    shift = 20;
  } else if (unit == "G") {
    shift = 30;
  } else if (unit == "T") {
    shift = 40;
  } else if (!unit.empty()) {
    return bad(flag, text, "unknown unit '" + std::string(text.substr(i)) + "' (use K, M, G or T)");
  }
  const std::string too_large = "too large (at most " + format_size(max_bytes) + ")";
  uint64_t n = 0;
  const auto r = std::from_chars(text.data(), text.data() + i, n);
  if (r.ec != std::errc() || n > (static_cast<uint64_t>(max_bytes) >> shift)) {
    return bad(flag, text, too_large);
  }
  return static_cast<int64_t>(n << shift);
}

std::string flag_display_name(const std::string& names) {
  std::string out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(start, end - start);
    out += (out.empty() ? "" : "/") + name;
    if (name.starts_with("--")) break;
    start = end + 1;
  }
  return out;
}

namespace {

// add_count_option with an extra rule: `refuse(v)` returns why a value in range is still wrong
// ("" when it is fine).
CLI::Option* add_checked_count_option(CLI::App* app, const std::string& names, int32_t& value,
                                      int32_t lo, int32_t hi, const std::string& help,
                                      std::function<std::string(int64_t)> refuse) {
  const std::string flag = flag_display_name(names);
  auto* opt = app->add_option_function<std::string>(
      names,
      [flag, lo, hi, &value, refuse = std::move(refuse)](const std::string& text) {
        auto v = parse_count(flag, text, lo, hi);
        if (!v.ok()) throw CLI::ValidationError(v.status().message());
        if (refuse) {
          if (std::string why = refuse(*v); !why.empty()) {
            throw CLI::ValidationError(flag + " " + text + ": " + why);
          }
        }
        value = static_cast<int32_t>(*v);
      },
      help);
  opt->type_name("INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  opt->default_str(std::to_string(value));
  return opt;
}

}  // namespace

CLI::Option* add_count_option(CLI::App* app, const std::string& names, int32_t& value, int32_t lo,
                              int32_t hi, const std::string& help) {
  return add_checked_count_option(app, names, value, lo, hi, help, nullptr);
}

CLI::Option* add_context_option(CLI::App* app, int32_t& value, const std::string& help) {
  return add_checked_count_option(
      app, "-c,--ctx,--ctx-size", value, 0, std::numeric_limits<int32_t>::max(), help,
      [](int64_t v) -> std::string {
        return v == 1 ? "too small (a context holds a prompt token and a generated one: at least "
                        "2, or 0 for the model's own)"
                      : "";
      });
}

CLI::Option* add_real_option(CLI::App* app, const std::string& names, double& value, double lo,
                             double hi, const std::string& help) {
  const std::string flag = flag_display_name(names);
  auto* opt = app->add_option_function<std::string>(
      names,
      [flag, lo, hi, &value](const std::string& text) {
        auto v = parse_real(flag, text, lo, hi);
        if (!v.ok()) throw CLI::ValidationError(v.status().message());
        value = *v;
      },
      help);
  opt->type_name("FLOAT in [" + format_real(lo) + ", " + format_real(hi) + "]");
  opt->default_str(format_real(value));
  return opt;
}

}  // namespace geniex::cli
