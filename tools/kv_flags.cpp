#include "kv_flags.h"

#include <limits>
#include <string>

#include "core/status.h"
#include "number_flags.h"

namespace geniex::cli {

void add_kv_flags(CLI::App* c, KvOptions& o) {
  c->add_option("--kv-type", o.type, "KV cache type: f16, f32, q8_0 or q4_0")
      ->capture_default_str();
  c->add_option("--kv-budget", o.budget,
                "most KV bytes in memory (e.g. 64M; K, M, G, T; at most 1024T); colder blocks "
                "spill to --spill-dir");
  c->add_option("--spill-dir", o.spill_dir,
                "folder of the KV spill file (default $TMPDIR or /tmp)");
  c->add_option("--ctx-overflow", o.overflow,
                "when the context fills: stop (end with context_full) or shift (drop the oldest "
                "half after --keep tokens and go on)")
      ->capture_default_str();
  add_count_option(c, "--keep", o.keep, 0, std::numeric_limits<int32_t>::max(),
                   "tokens a context shift keeps at the start");
}

Status apply_kv_flags(const KvOptions& o, ModelBuilder& b) {
  GENIEX_ASSIGN_OR_RETURN(KvCacheType t, parse_kv_cache_type(o.type));
  b.with_kv_cache_type(t);
  if (!o.budget.empty()) {
    GENIEX_ASSIGN_OR_RETURN(int64_t bytes, parse_size("--kv-budget", o.budget, kMaxKvBudget));
    b.with_kv_budget(bytes, o.spill_dir);
  }
  if (o.overflow == "shift") {
    b.with_context_overflow(ContextOverflow::kShift, o.keep);
  } else if (o.overflow != "stop") {
    return invalid_argument("--ctx-overflow '" + o.overflow + "' (expected stop or shift)");
  }
  return {};
}

}  // namespace geniex::cli
