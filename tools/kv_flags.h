// KV-cache flags shared by run, chat, bench and serve: --kv-type, --kv-budget, --spill-dir,
// --ctx-overflow, --keep.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "geniex/geniex.hpp"

namespace geniex::cli {

struct KvOptions {
  std::string type = "f16";
  std::string budget;  ///< e.g. "64M", "1G", "1048576" (parse_size); empty = no budget
  std::string spill_dir;
  std::string overflow = "stop";
  int32_t keep = 0;
};

void add_kv_flags(CLI::App* c, KvOptions& o);

/// Applies the options to `b`; kInvalidArgument for a bad type, size or policy.
Status apply_kv_flags(const KvOptions& o, ModelBuilder& b);

/// The largest --kv-budget: 1 PiB, more memory than any machine has (a budget that never
/// spills); larger values are typos or attacks, and used to wrap to 0 (no budget).
inline constexpr int64_t kMaxKvBudget = int64_t{1} << 50;

}  // namespace geniex::cli
