#include "kv_flags.h"

#include <cctype>
#include <string>

#include "core/status.h"

namespace geniex::cli {

Result<int64_t> parse_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
  if (i == 0 || i > 15) return invalid_argument("size '" + text + "' (expected e.g. 512M or 2G)");
  int64_t v = std::stoll(text.substr(0, i));
  std::string unit = text.substr(i);
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
  } else if (!unit.empty()) {
    return invalid_argument("size '" + text + "': unknown unit (use K, M or G)");
  }
  return v << shift;
}

void add_kv_flags(CLI::App* c, KvOptions& o) {
  c->add_option("--kv-type", o.type, "KV cache type: f16, f32, q8_0 or q4_0")
      ->capture_default_str();
  c->add_option("--kv-budget", o.budget,
                "most KV bytes in memory (e.g. 64M); colder blocks spill to --spill-dir");
  c->add_option("--spill-dir", o.spill_dir,
                "folder of the KV spill file (default $TMPDIR or /tmp)");
  c->add_option("--ctx-overflow", o.overflow,
                "when the context fills: stop (end with context_full) or shift (drop the oldest "
                "half after --keep tokens and go on)")
      ->capture_default_str();
  c->add_option("--keep", o.keep, "tokens a context shift keeps at the start")
      ->capture_default_str();
}

Status apply_kv_flags(const KvOptions& o, ModelBuilder& b) {
  GENIEX_ASSIGN_OR_RETURN(KvCacheType t, parse_kv_cache_type(o.type));
  b.with_kv_cache_type(t);
  if (!o.budget.empty()) {
    GENIEX_ASSIGN_OR_RETURN(int64_t bytes, parse_size(o.budget));
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
