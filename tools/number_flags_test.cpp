// The CLI's number parsing against hostile values: overflow, negatives, NaN and infinity give
// an error naming the flag and the value, never a wrapped, truncated or zero value.
#include "number_flags.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace geniex::cli {
namespace {

template <typename T>
std::string error_of(const Result<T>& r) {
  return r.ok() ? "(ok)" : r.status().message();
}

TEST(NumberFlags, CountsInRange) {
  EXPECT_EQ(*parse_count("-t", "8", 0, 1024), 8);
  EXPECT_EQ(*parse_count("-t", "+8", 0, 1024), 8);
  EXPECT_EQ(*parse_count("--chunks", "-1", -1, 100), -1);
  EXPECT_EQ(*parse_count("-t", "1024", 0, 1024), 1024);
}

TEST(NumberFlags, CountErrorsNameTheFlagAndTheValue) {
  EXPECT_EQ(error_of(parse_count("-t/--threads", "1000000", 0, 1024)),
            "-t/--threads 1000000: too large (at most 1024)");
  EXPECT_EQ(error_of(parse_count("-t/--threads", "-3", 0, 1024)),
            "-t/--threads -3: negative (must be >= 0)");
  EXPECT_EQ(error_of(parse_count("-r", "0", 1, 10)), "-r 0: too small (at least 1)");
  EXPECT_EQ(error_of(parse_count("-p", "99999999999999999999", 0, 10)),
            "-p 99999999999999999999: too large (at most 10)");
  EXPECT_EQ(error_of(parse_count("-p", "-99999999999999999999", 0, 10)),
            "-p -99999999999999999999: too small (at least 0)");
  for (const char* text : {"", "1e3", "12abc", "nan", "0x10", "+-5", " 5", "5 "}) {
    EXPECT_EQ(error_of(parse_count("-p", text, 0, 10)),
              std::string("-p ") + text + ": not a whole number");
  }
}

TEST(NumberFlags, RealsMustBeFiniteAndInRange) {
  EXPECT_DOUBLE_EQ(*parse_real("--max-body-mb", "4", 1e-3, 1024), 4.0);
  EXPECT_DOUBLE_EQ(*parse_real("--max-body-mb", "0.5", 1e-3, 1024), 0.5);
  EXPECT_DOUBLE_EQ(*parse_real("--max-body-mb", "1e3", 1e-3, 1024), 1000.0);
  EXPECT_EQ(error_of(parse_real("--max-body-mb", "1e30", 1e-3, 1024)),
            "--max-body-mb 1e30: too large (at most 1024)");
  EXPECT_EQ(error_of(parse_real("--max-body-mb", "1e400", 1e-3, 1024)),
            "--max-body-mb 1e400: too large (at most 1024)");
  EXPECT_EQ(error_of(parse_real("--max-body-mb", "1e-400", 1e-3, 1024)),
            "--max-body-mb 1e-400: too small (at least 0.001)");
  EXPECT_EQ(error_of(parse_real("--shutdown-timeout", "nan", 0, 86400)),
            "--shutdown-timeout nan: not a number");
  EXPECT_EQ(error_of(parse_real("--shutdown-timeout", "-nan", 0, 86400)),
            "--shutdown-timeout -nan: not a number");
  EXPECT_EQ(error_of(parse_real("--shutdown-timeout", "inf", 0, 86400)),
            "--shutdown-timeout inf: too large (at most 86400)");
  EXPECT_EQ(error_of(parse_real("--shutdown-timeout", "-inf", 0, 86400)),
            "--shutdown-timeout -inf: negative (must be >= 0)");
  EXPECT_EQ(error_of(parse_real("--shutdown-timeout", "-1", 0, 86400)),
            "--shutdown-timeout -1: negative (must be >= 0)");
  for (const char* text : {"", "abc", "1,5", "0x10", "4MB"}) {
    EXPECT_EQ(error_of(parse_real("--x", text, 0, 1)),
              std::string("--x ") + text + ": not a number");
  }
}

TEST(NumberFlags, SizesWithUnitsNeverWrap) {
  constexpr int64_t kMax = int64_t{1} << 50;
  EXPECT_EQ(*parse_size("--kv-budget", "1048576", kMax), 1048576);
  EXPECT_EQ(*parse_size("--kv-budget", "64M", kMax), 64 << 20);
  EXPECT_EQ(*parse_size("--kv-budget", "2GiB", kMax), int64_t{2} << 30);
  EXPECT_EQ(*parse_size("--kv-budget", "512kb", kMax), 512 << 10);
  EXPECT_EQ(*parse_size("--kv-budget", "1024T", kMax), kMax);
  EXPECT_EQ(*parse_size("--kv-budget", "0", kMax), 0);
  // 17179869184G is 2^64 bytes: it used to wrap to 0, which means no budget at all.
  EXPECT_EQ(error_of(parse_size("--kv-budget", "17179869184G", kMax)),
            "--kv-budget 17179869184G: too large (at most 1024T)");
  EXPECT_EQ(error_of(parse_size("--kv-budget", "1025T", kMax)),
            "--kv-budget 1025T: too large (at most 1024T)");
  EXPECT_EQ(error_of(parse_size("--kv-budget", "99999999999999999999999", kMax)),
            "--kv-budget 99999999999999999999999: too large (at most 1024T)");
  EXPECT_EQ(error_of(parse_size("--kv-budget", "-5M", kMax)),
            "--kv-budget -5M: negative (expected a size such as 512M or 2G)");
  EXPECT_EQ(error_of(parse_size("--kv-budget", "5X", kMax)),
            "--kv-budget 5X: unknown unit 'X' (use K, M, G or T)");
  EXPECT_EQ(error_of(parse_size("--kv-budget", "M", kMax)),
            "--kv-budget M: expected a size such as 512M or 2G");
  EXPECT_EQ(format_size(4 << 20), "4M");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(NumberFlags, DisplayNames) {
  EXPECT_EQ(flag_display_name("-c,--ctx,--ctx-size"), "-c/--ctx");
  EXPECT_EQ(flag_display_name("-t,--threads"), "-t/--threads");
  EXPECT_EQ(flag_display_name("--max-body-mb"), "--max-body-mb");
  EXPECT_EQ(flag_display_name("-P"), "-P");
}

// Through CLI11: the value is checked at parse time and a bad one is a parse error (exit 2).
TEST(NumberFlags, OptionsRejectBadValuesWhileParsing) {
  CLI::App app;
  int32_t threads = 0;
  double timeout = 5.0;
  add_count_option(&app, "-t,--threads", threads, 0, 1024, "threads");
  add_real_option(&app, "--shutdown-timeout", timeout, 0, 86400, "seconds");
  app.parse(std::vector<std::string>{"2.5", "--shutdown-timeout", "12", "-t"});  // reversed
  EXPECT_EQ(threads, 12);
  EXPECT_DOUBLE_EQ(timeout, 2.5);
  for (std::vector<std::string> args : {std::vector<std::string>{"1000000", "-t"},
                                        std::vector<std::string>{"nan", "--shutdown-timeout"}}) {
    CLI::App a;
    int32_t t = 0;
    double s = 5.0;
    add_count_option(&a, "-t,--threads", t, 0, 1024, "threads");
    add_real_option(&a, "--shutdown-timeout", s, 0, 86400, "seconds");
    try {
      a.parse(args);
      ADD_FAILURE() << args[1] << " " << args[0] << " was accepted";
    } catch (const CLI::ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(args[0]), std::string::npos) << e.what();
      EXPECT_NE(e.get_exit_code(), 0);
    }
    EXPECT_EQ(t, 0);
    EXPECT_DOUBLE_EQ(s, 5.0);
  }
}

TEST(NumberFlags, AContextIsZeroOrAtLeastTwo) {
  for (const char* ok : {"0", "2", "4096"}) {
    CLI::App a;
    int32_t ctx = 7;
    add_context_option(&a, ctx, "context");
    a.parse(std::vector<std::string>{ok, "-c"});
    EXPECT_EQ(ctx, std::stoi(ok));
  }
  CLI::App a;
  int32_t ctx = 7;
  add_context_option(&a, ctx, "context");
  try {
    a.parse(std::vector<std::string>{"1", "--ctx-size"});
    ADD_FAILURE() << "--ctx-size 1 was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("-c/--ctx 1: too small"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx, 7);
}

}  // namespace
}  // namespace geniex::cli
