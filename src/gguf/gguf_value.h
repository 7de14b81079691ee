// GGUF metadata values: the 13 on-disk value types, scalars and (non-nested) arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace geniex::gguf {

/// On-disk metadata value type ids (gguf_type).
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// "UINT32", "STRING", ... ; "?" for an id outside the table.
std::string_view value_type_name(ValueType t);
/// Whether `raw` is one of the 13 ids.
bool is_valid_value_type(uint32_t raw);
/// Encoded size of one scalar of type `t` (0 for STRING/ARRAY, whose size varies).
uint32_t value_type_size(ValueType t);
bool is_integer_type(ValueType t);
bool is_signed_integer_type(ValueType t);
bool is_float_type(ValueType t);

/// One metadata value. Integers are widened for storage but keep their on-disk type, so a
/// value written back is byte-identical. Arrays hold one element kind; nested arrays are
/// not supported (llama.cpp rejects them too).
class Value {
 public:
  using Storage = std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<uint64_t>,
                               std::vector<int64_t>, std::vector<double>, std::vector<bool>,
                               std::vector<std::string>>;

  Value() : type_(ValueType::kUint8), storage_(uint64_t{0}) {}

  // Scalar constructors; the type must match the storage kind (checked by assert).
  static Value of_uint(ValueType t, uint64_t v);
  static Value of_int(ValueType t, int64_t v);
  static Value of_float(ValueType t, double v);
  static Value of_bool(bool v);
  static Value of_string(std::string v);
  // Array constructors; `elem` is the element type.
  static Value of_uint_array(ValueType elem, std::vector<uint64_t> v);
  static Value of_int_array(ValueType elem, std::vector<int64_t> v);
  static Value of_float_array(ValueType elem, std::vector<double> v);
  static Value of_bool_array(std::vector<bool> v);
  static Value of_string_array(std::vector<std::string> v);

  [[nodiscard]] ValueType type() const { return type_; }
  /// Element type of an array (meaningless for scalars).
  [[nodiscard]] ValueType elem_type() const { return elem_; }
  [[nodiscard]] bool is_array() const { return type_ == ValueType::kArray; }
  /// Number of elements of an array; 1 for a scalar.
  [[nodiscard]] size_t array_size() const;
  [[nodiscard]] const Storage& storage() const { return storage_; }

  // Typed reads. Integer reads accept any integer width and check the range.
  [[nodiscard]] std::optional<uint64_t> as_uint() const;
  [[nodiscard]] std::optional<int64_t> as_int() const;
  /// Any float or integer scalar, as double.
  [[nodiscard]] std::optional<double> as_float() const;
  [[nodiscard]] std::optional<bool> as_bool() const;
  [[nodiscard]] const std::string* as_string() const;
  [[nodiscard]] const std::vector<std::string>* as_string_array() const;
  /// Integer array of any width, widened to int64 (uint64 values above INT64_MAX fail).
  [[nodiscard]] std::optional<std::vector<int64_t>> as_int_array() const;
  /// Float or integer array as float.
  [[nodiscard]] std::optional<std::vector<float>> as_float_array() const;

  /// Short human form: scalars in full, arrays as "[a, b, c, ... (N)]" past `max_items`.
  [[nodiscard]] std::string to_display(size_t max_items = 8) const;

  /// Same type and same value; floats compare by bit pattern, so NaN == NaN and a value
  /// read back from its own writing always equals itself.
  bool operator==(const Value& o) const;

 private:
  Value(ValueType t, ValueType elem, Storage s) : type_(t), elem_(elem), storage_(std::move(s)) {}

  ValueType type_;
  ValueType elem_ = ValueType::kUint8;
  Storage storage_;
};

/// One metadata entry, in file order.
struct KeyValue {
  std::string key;
  Value value;
  bool operator==(const KeyValue& o) const = default;
};

}  // namespace geniex::gguf
