// Numbers from the command line, read with every check hostile input needs: overflow,
// negative values, NaN and infinity, and a range of values that make sense. Errors name the
// flag and the value as typed ("--max-body-mb 1e30: too large (at most 1024)"). Every count,
// size and duration flag of the CLI reads through here, so none wraps, truncates or turns
// NaN into 0.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace geniex::cli {

/// A whole number in [lo, hi] ("512", "-1", "+3"). kInvalidArgument otherwise.
Result<int64_t> parse_count(std::string_view flag, std::string_view text, int64_t lo, int64_t hi);

/// A finite decimal number in [lo, hi] ("4", "0.5", "1e3"). NaN, infinities and values beyond
/// the range are kInvalidArgument.
Result<double> parse_real(std::string_view flag, std::string_view text, double lo, double hi);

/// A size in bytes, at most `max_bytes`: digits with an optional K, M, G or T (powers of 1024;
/// "B" or "iB" may follow: "64M", "2GiB", "1048576"). kInvalidArgument for anything else.
Result<int64_t> parse_size(std::string_view flag, std::string_view text, int64_t max_bytes);

/// `max_bytes` as parse_size's errors write it ("1024T", "4G", "1000").
std::string format_size(int64_t bytes);

/// The flag as errors name it: `names` up to its first long name ("-c,--ctx,--ctx-size" ->
/// "-c/--ctx").
std::string flag_display_name(const std::string& names);

/// An int32 option read by parse_count at parse time: a bad value is a usage error (exit 2)
/// before any command runs. The current `value` is the default shown in --help.
CLI::Option* add_count_option(CLI::App* app, const std::string& names, int32_t& value, int32_t lo,
                              int32_t hi, const std::string& help);

/// -c/--ctx/--ctx-size: a context size in [0, INT32_MAX] that is 0 (the model's own) or at least
/// 2 (a prompt token and a generated one); run, chat and serve share it.
CLI::Option* add_context_option(CLI::App* app, int32_t& value, const std::string& help);
/// A double option read by parse_real at parse time, like add_count_option.
CLI::Option* add_real_option(CLI::App* app, const std::string& names, double& value, double lo,
                             double hi, const std::string& help);

}  // namespace geniex::cli
