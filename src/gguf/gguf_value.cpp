#include "gguf/gguf_value.h"

#include <bit>
#include <cassert>
#include <cstdio>
#include <limits>

namespace geniex::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "UINT8";
    case ValueType::kInt8: return "INT8";
    case ValueType::kUint16: return "UINT16";
    case ValueType::kInt16: return "INT16";
    case ValueType::kUint32: return "UINT32";
    case ValueType::kInt32: return "INT32";
    case ValueType::kFloat32: return "FLOAT32";
    case ValueType::kBool: return "BOOL";
    case ValueType::kString: return "STRING";
    case ValueType::kArray: return "ARRAY";
    case ValueType::kUint64: return "UINT64";
    case ValueType::kInt64: return "INT64";
    case ValueType::kFloat64: return "FLOAT64";
  }
  return "?";
}

bool is_valid_value_type(uint32_t raw) { return raw <= 12; }

uint32_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64: return 8;
    case ValueType::kString:
    case ValueType::kArray: return 0;
  }
  return 0;
}

bool is_signed_integer_type(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}

bool is_integer_type(ValueType t) {
  return is_signed_integer_type(t) || t == ValueType::kUint8 || t == ValueType::kUint16 ||
         t == ValueType::kUint32 || t == ValueType::kUint64;
}

bool is_float_type(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }

Value Value::of_uint(ValueType t, uint64_t v) {
  assert(is_integer_type(t) && !is_signed_integer_type(t));
  return {t, t, v};
}
Value Value::of_int(ValueType t, int64_t v) {
  assert(is_signed_integer_type(t));
  return {t, t, v};
}
Value Value::of_float(ValueType t, double v) {
  assert(is_float_type(t));
  return {t, t, t == ValueType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v};
}
Value Value::of_bool(bool v) { return {ValueType::kBool, ValueType::kBool, v}; }
Value Value::of_string(std::string v) {
  return {ValueType::kString, ValueType::kString, std::move(v)};
}
Value Value::of_uint_array(ValueType elem, std::vector<uint64_t> v) {
  assert(is_integer_type(elem) && !is_signed_integer_type(elem));
  return {ValueType::kArray, elem, std::move(v)};
}
Value Value::of_int_array(ValueType elem, std::vector<int64_t> v) {
  assert(is_signed_integer_type(elem));
  return {ValueType::kArray, elem, std::move(v)};
}
Value Value::of_float_array(ValueType elem, std::vector<double> v) {
  assert(is_float_type(elem));
  if (elem == ValueType::kFloat32) {
    for (double& d : v) d = static_cast<double>(static_cast<float>(d));
  }
  return {ValueType::kArray, elem, std::move(v)};
}
Value Value::of_bool_array(std::vector<bool> v) {
  return {ValueType::kArray, ValueType::kBool, std::move(v)};
}
Value Value::of_string_array(std::vector<std::string> v) {
  return {ValueType::kArray, ValueType::kString, std::move(v)};
}

size_t Value::array_size() const {
  if (!is_array()) return 1;
  return std::visit(
      [](const auto& s) -> size_t {
        using S = std::decay_t<decltype(s)>;
        if constexpr (requires { s.size(); } && !std::is_same_v<S, std::string>) {
          return s.size();
        } else {
          return 1;
        }
      },
      storage_);
}

std::optional<uint64_t> Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&storage_)) return *u;
  if (const auto* i = std::get_if<int64_t>(&storage_)) {
    if (*i >= 0) return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

std::optional<int64_t> Value::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&storage_)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&storage_)) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
  }
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (const auto* d = std::get_if<double>(&storage_)) return *d;
  if (const auto* i = std::get_if<int64_t>(&storage_)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&storage_)) return static_cast<double>(*u);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&storage_)) return *b;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return is_array() ? nullptr : std::get_if<std::string>(&storage_);
}

const std::vector<std::string>* Value::as_string_array() const {
  return std::get_if<std::vector<std::string>>(&storage_);
}

std::optional<std::vector<int64_t>> Value::as_int_array() const {
  if (const auto* v = std::get_if<std::vector<int64_t>>(&storage_)) return *v;
  if (const auto* v = std::get_if<std::vector<uint64_t>>(&storage_)) {
    std::vector<int64_t> out;
    out.reserve(v->size());
    for (uint64_t x : *v) {
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      out.push_back(static_cast<int64_t>(x));
    }
    return out;
  }
  return std::nullopt;
}

std::optional<std::vector<float>> Value::as_float_array() const {
  std::vector<float> out;
  if (const auto* v = std::get_if<std::vector<double>>(&storage_)) {
    out.reserve(v->size());
    for (double x : *v) out.push_back(static_cast<float>(x));
    return out;
  }
  if (const auto* v = std::get_if<std::vector<int64_t>>(&storage_)) {
    out.reserve(v->size());
    for (int64_t x : *v) out.push_back(static_cast<float>(x));
    return out;
  }
  if (const auto* v = std::get_if<std::vector<uint64_t>>(&storage_)) {
    out.reserve(v->size());
    for (uint64_t x : *v) out.push_back(static_cast<float>(x));
    return out;
  }
  return std::nullopt;
}

bool Value::operator==(const Value& o) const {
  if (type_ != o.type_ || elem_ != o.elem_ || storage_.index() != o.storage_.index()) return false;
  const auto bits = [](double d) { return std::bit_cast<uint64_t>(d); };
  if (const auto* d = std::get_if<double>(&storage_))
    return bits(*d) == bits(std::get<double>(o.storage_));
  if (const auto* v = std::get_if<std::vector<double>>(&storage_)) {
    const auto& w = std::get<std::vector<double>>(o.storage_);
    if (v->size() != w.size()) return false;
    for (size_t i = 0; i < v->size(); ++i) {
      if (bits((*v)[i]) != bits(w[i])) return false;
    }
    return true;
  }
  return storage_ == o.storage_;
}

namespace {

std::string quote(const std::string& s, size_t max_len) {
  std::string out = "\"";
  const size_t n = s.size() < max_len ? s.size() : max_len;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x",
                    static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string fmt_double(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  return buf;
}

template <typename T, typename F>
std::string join(const std::vector<T>& v, size_t max_items, F&& one) {
  std::string out = "[";
  const size_t n = v.size() < max_items ? v.size() : max_items;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    out += one(v[i]);
  }
  if (n < v.size()) out += (n ? ", ... (" : "... (") + std::to_string(v.size()) + " items)";
  out += "]";
  return out;
}

}  // namespace

std::string Value::to_display(size_t max_items) const {
  constexpr size_t kMaxString = 120;
  return std::visit(
      [&](const auto& s) -> std::string {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, uint64_t> || std::is_same_v<S, int64_t>) {
          return std::to_string(s);
        } else if constexpr (std::is_same_v<S, double>) {
          return fmt_double(s);
        } else if constexpr (std::is_same_v<S, bool>) {
          return s ? "true" : "false";
        } else if constexpr (std::is_same_v<S, std::string>) {
          return quote(s, kMaxString);
        } else if constexpr (std::is_same_v<S, std::vector<std::string>>) {
          return join(s, max_items, [](const std::string& x) { return quote(x, 40); });
        } else if constexpr (std::is_same_v<S, std::vector<double>>) {
          return join(s, max_items, fmt_double);
        } else if constexpr (std::is_same_v<S, std::vector<bool>>) {
          std::vector<int> ints(s.begin(), s.end());
          return join(ints, max_items, [](int b) { return std::string(b ? "true" : "false"); });
        } else {
          return join(s, max_items, [](auto x) { return std::to_string(x); });
        }
      },
      storage_);
}

}  // namespace geniex::gguf
