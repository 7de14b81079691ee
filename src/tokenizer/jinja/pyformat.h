// Python-compatible text formatting: float repr, str repr, json.dumps, UTF-8 and whitespace
// helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace geniex::jinja {

class Value;

/// Python repr(float): shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string python_float_repr(double d);
/// Python repr(str): quotes chosen like CPython, control characters escaped.
std::string python_string_repr(std::string_view s);

/// Options of Python's json.dumps as Hugging Face's tojson filter passes them.
struct JsonOptions {
  std::optional<std::string> indent;  ///< nullopt: one line; else the per-level indent string
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
/// json.dumps(value, ...); throws JinjaError for values JSON cannot hold.
std::string python_json_dumps(const Value& v, const JsonOptions& opts);

/// UTF-8 <-> code points. Invalid bytes decode to U+FFFD one byte at a time.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t cp);
/// Python s[index] for a str: the code point at `index` (negative counts from the end), nullopt
/// when out of range. Walks only as far as it must (s[0] is O(1)).
std::optional<std::string> utf8_at(std::string_view s, int64_t index);
/// Number of code points (Python len of str).
size_t utf8_length(std::string_view s);
bool is_ascii(std::string_view s);

/// Python str.isspace() for one code point.
bool is_py_space(char32_t c);
/// Python str.strip/lstrip/rstrip; `chars` nullopt means whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
/// Python str.split(sep=None) / str.split(sep, maxsplit).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_replace(std::string_view s, std::string_view old, std::string_view with,
                       int64_t count);

}  // namespace geniex::jinja
