// A JSON Schema compiled for constrained generation: the subset a generated value can be held
// to byte by byte (matcher.h). Supported: type (one or a list), object (properties, required,
// additionalProperties), array (items, minItems, maxItems), string (enum, const, minLength,
// maxLength, format date / time / date-time / uuid), number and integer (minimum, maximum,
// exclusiveMinimum, exclusiveMaximum), boolean, null, enum and const of any JSON value, anyOf,
// oneOf (as anyOf: exclusivity is not enforced), $ref to #/$defs/NAME or #/definitions/NAME
// (recursion allowed), true / {} (any value). Annotations (title, description, default,
// examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are ignored. Any other
// keyword is kInvalidArgument naming it: the output must always validate against the schema.
//
// Objects: properties come in the schema's order; required ones always, optional ones may be
// left out. With no properties and additionalProperties true or a schema, any keys (values of
// that schema). Declared properties plus additionalProperties other than false: only the
// declared ones are generated (still valid).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace geniex::engine::json_schema {

enum class Kind : uint8_t {
  kAny,      ///< any JSON value
  kObject,   ///< see Node::props / extra
  kArray,    ///< items, min_items, max_items
  kString,   ///< min_len, max_len, formats
  kNumber,   ///< bounds
  kInteger,  ///< bounds
  kBoolean,
  kNull,
  kLiterals,  ///< one of `literals` (compact JSON texts: enum / const)
  kAnyOf,     ///< one of `alts`
};

struct Prop {
  std::string key;  ///< the key as it appears between the quotes (JSON-escaped)
  int32_t node = 0;
  bool required = false;
};

struct Node {
  Kind kind = Kind::kAny;
  std::vector<Prop> props;  ///< kObject, in schema order
  int32_t extra = -1;       ///< kObject without props: the values' node for any key; -1: none
  int32_t items = -1;       ///< kArray: the items' node (-1: any)
  int64_t min_items = 0, max_items = -1;
  int64_t min_len = 0, max_len = -1;  ///< kString, in characters
  std::vector<std::string> formats;   ///< kString: templates the content must match (any one)
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::vector<std::string> literals;  ///< kLiterals
  std::vector<int32_t> alts;          ///< kAnyOf
};

/// The compiled schema: node 0 is the root.
struct Schema {
  std::vector<Node> nodes;
};

/// Compiles a JSON Schema given as JSON text. kInvalidArgument for invalid JSON, a schema that
/// is not an object or boolean, an unsupported keyword (named, with its path), a $ref that does
/// not resolve, an impossible bound (minItems > maxItems, ...).
Result<Schema> compile(std::string_view schema_json);

/// Whether `v` meets a number node's minimum, maximum and exclusive bounds.
bool in_bounds(const Node& n, double v);

/// Whether `json_text` is one JSON value that satisfies `schema` (for tests and for checking a
/// finished output).
bool validates(const Schema& schema, std::string_view json_text);

}  // namespace geniex::engine::json_schema
