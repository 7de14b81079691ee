// Fuzzes the JSON Schema compiler and the constrained-generation matcher: input = a schema, a
// NUL byte, then text fed in pieces. They must never crash, throw or hang; what the matcher
// accepts as complete must validate.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/json_schema/matcher.h"
#include "engine/json_schema/schema.h"

namespace js = geniex::engine::json_schema;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\0');
  const std::string_view schema = in.substr(0, cut);
  const std::string_view text = cut == std::string_view::npos ? "" : in.substr(cut + 1);
  auto s = js::compile(schema);
  if (!s.ok()) return 0;
  js::Matcher m(*s);
  std::string fed;
  for (size_t i = 0; i < text.size(); i += 3) {
    const std::string_view piece = text.substr(i, 3);
    if (m.feed(piece)) fed.append(piece);
  }
  if (m.complete() && !js::validates(*s, fed)) __builtin_trap();
  return 0;
}
