// geniex::check_json_schema: the public check of a GenerationConfig::json_schema (front ends
// answer a bad schema before they start a generation).
#include "engine/json_schema/schema.h"
#include "geniex/geniex.hpp"

namespace geniex {

Status check_json_schema(std::string_view schema_json) {
  auto s = engine::json_schema::compile(schema_json);
  return s.ok() ? Status{} : s.status();
}

}  // namespace geniex
