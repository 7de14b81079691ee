// Python-compatible text formatting helpers.
#include "tokenizer/jinja/pyformat.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/value.h"

namespace geniex::jinja {

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]d[.ddd]e[+-]XX
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp10 = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits.push_back(c);
  int decpt = exp10 + 1;  // position of the decimal point relative to the digit string
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    int x = decpt - 1;
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    out += eb;
  }
  return out;
}

namespace {

bool py_printable(char32_t c) {
  if (c < 0x20 || c == 0x7f) return false;
  if (c >= 0x80 && c <= 0xa0) return false;
  if (c == 0xad || c == 0x1680 || c == 0x180e || c == 0x3000 || c == 0xfeff) return false;
  if (c >= 0x600 && c <= 0x605) return false;
  if (c == 0x61c || c == 0x6dd || c == 0x70f) return false;
  if (c >= 0x2000 && c <= 0x200f) return false;
  if (c >= 0x2028 && c <= 0x202f) return false;
  if (c >= 0x205f && c <= 0x206f) return false;
  if (c >= 0xd800 && c <= 0xdfff) return false;
  if (c >= 0xfff9 && c <= 0xfffb) return false;
  if (c >= 0xe000 && c <= 0xf8ff) return false;  // private use
  return true;
}

void append_hex(std::string& out, const char* prefix, unsigned width, uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "%s%0*x", prefix, static_cast<int>(width), v);
  out += b;
}

}  // namespace

std::string python_string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py_printable(c)) {
      if (c < 0x100)
        append_hex(out, "\\x", 2, c);
      else if (c < 0x10000)
        append_hex(out, "\\u", 4, c);
      else
        append_hex(out, "\\U", 8, c);
    } else {
      utf8_append(out, c);
    }
  }
  out += q;
  return out;
}

namespace {

void json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          append_hex(out, "\\u", 4, c);
        } else if (ensure_ascii && c > 0x7e) {
          if (c >= 0x10000) {
            uint32_t v = c - 0x10000;
            append_hex(out, "\\u", 4, 0xd800 + (v >> 10));
            append_hex(out, "\\u", 4, 0xdc00 + (v & 0x3ff));
          } else {
            append_hex(out, "\\u", 4, c);
          }
        } else {
          utf8_append(out, c);
        }
    }
  }
  out += '"';
}

std::string json_key(const Value& k) {
  if (k.is_string()) return k.as_string();
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_none()) return "null";
  if (k.is_int()) return std::to_string(k.as_int());
  if (k.is_float()) return python_float_repr(k.as_float());
  type_error("keys must be str, int, float, bool or None, not " + k.type_name());
}

// Containers being written: json.dumps refuses a value that contains itself. A set, not a scan
// of the path: a value can be thousands deep and visited many times.
using OpenContainers = std::unordered_set<const void*>;

struct OpenScope {
  OpenScope(OpenContainers& open, const void* c) : open_(open), c_(c) {
    if (!open_.insert(c).second) type_error("ValueError: Circular reference detected");
  }
  ~OpenScope() { open_.erase(c_); }
  OpenScope(const OpenScope&) = delete;
  OpenScope& operator=(const OpenScope&) = delete;
  OpenContainers& open_;
  const void* c_;
};

void json_value(std::string& out, const Value& v, const JsonOptions& o, int depth,
                OpenContainers& open) {
  NestGuard nest;
  charge_steps(1);
  check_string_size(out.size());
  auto newline = [&](int d) {
    if (!o.indent) return;
    check_string_size(out.size() + 1 + static_cast<uint64_t>(d) * o.indent->size());
    out += '\n';
    for (int i = 0; i < d; ++i) out += *o.indent;
  };
  if (v.is_none()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.as_int());
  } else if (v.is_float()) {
    double d = v.as_float();
    if (std::isnan(d))
      out += "NaN";
    else if (std::isinf(d))
      out += d > 0 ? "Infinity" : "-Infinity";
    else
      out += python_float_repr(d);
  } else if (v.is_string()) {
    json_string(out, v.as_string(), o.ensure_ascii);
  } else if (v.is_list()) {
    const auto& items = v.as_list()->items;
    if (items.empty()) {
      out += "[]";
      return;
    }
    OpenScope scope(open, v.as_list().get());
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o.item_sep;
      newline(depth + 1);
      json_value(out, items[i], o, depth + 1, open);
    }
    newline(depth);
    out += ']';
  } else if (v.is_dict() && !v.as_dict()->is_namespace) {
    OpenScope scope(open, v.as_dict().get());
    charge_elements(v.as_dict()->items.size(), sizeof(std::pair<std::string, const Value*>));
    std::vector<std::pair<std::string, const Value*>> items;
    for (const auto& [k, val] : v.as_dict()->items) items.emplace_back(json_key(k), &val);
    if (o.sort_keys) {
      std::stable_sort(items.begin(), items.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    if (items.empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += o.item_sep;
      newline(depth + 1);
      json_string(out, items[i].first, o.ensure_ascii);
      out += o.key_sep;
      json_value(out, *items[i].second, o, depth + 1, open);
    }
    newline(depth);
    out += '}';
  } else {
    type_error("Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string python_json_dumps(const Value& v, const JsonOptions& opts) {
  std::string out;
  OpenContainers open;
  json_value(out, v, opts, 0, open);
  check_string_size(out.size());
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

namespace {

// Decodes the code point at byte `i` into `cp` and returns the byte after it. An invalid or
// truncated sequence decodes to U+FFFD and consumes one byte.
size_t decode_one(std::string_view s, size_t i, char32_t& cp) {
  auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n < 0 || i + static_cast<size_t>(n) >= s.size()) {
    cp = U'\uFFFD';
    return i + 1;
  }
  char32_t v = n == 0 ? c : n == 1 ? (c & 0x1f) : n == 2 ? (c & 0x0f) : (c & 0x07);
  for (int k = 1; k <= n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((cc & 0xc0) != 0x80) {
      cp = U'\uFFFD';
      return i + 1;
    }
    v = (v << 6) | (cc & 0x3f);
  }
  cp = v;
  return i + static_cast<size_t>(n) + 1;
}

}  // namespace

std::u32string utf8_decode(std::string_view s) {
  // Scanned once, and up to 4 bytes per code point allocated.
  charge_bytes(uint64_t{5} * s.size());
  std::u32string out;
  out.reserve(s.size());
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    i = decode_one(s, i, cp);
    out += cp;
  }
  return out;
}

std::optional<std::string> utf8_at(std::string_view s, int64_t index) {
  if (index < 0) {
    index += static_cast<int64_t>(utf8_length(s));
    if (index < 0) return std::nullopt;
  }
  char32_t cp = 0;
  int64_t k = 0;
  for (size_t i = 0; i < s.size(); ++k) {
    i = decode_one(s, i, cp);
    if (k == index) {
      charge_bytes(i);
      std::string out;
      utf8_append(out, cp);
      return out;
    }
  }
  charge_bytes(s.size());
  return std::nullopt;
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

size_t utf8_length(std::string_view s) {
  charge_bytes(s.size());
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  char32_t cp = 0;
  for (size_t i = 0; i < s.size(); ++n) i = decode_one(s, i, cp);
  return n;
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::u32string u = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_py_space(c);
  };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && strip_it(u[b])) ++b;
  if (right)
    while (e > b && strip_it(u[e - 1])) --e;
  return utf8_encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    std::u32string u = utf8_decode(s);
    size_t i = 0;
    while (true) {
      while (i < u.size() && is_py_space(u[i])) ++i;
      if (i >= u.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        size_t e = u.size();
        while (e > i && is_py_space(u[e - 1])) --e;
        out.push_back(utf8_encode(std::u32string_view(u).substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < u.size() && !is_py_space(u[j])) ++j;
      charge_elements(out.size() + 1, 0);
      charge_bytes(sizeof(Value) + (j - i));
      out.push_back(utf8_encode(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  if (sep->empty()) fail(ErrorKind::kType, "ValueError: empty separator");
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) break;
    size_t p = s.find(*sep, start);
    if (p == std::string_view::npos) break;
    charge_elements(out.size() + 1, 0);
    charge_bytes(sizeof(Value) + (p - start));
    out.emplace_back(s.substr(start, p - start));
    start = p + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

namespace {

char32_t to_upper_cp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c >= 0xe0 && c <= 0xfe && c != 0xf7) return c - 32;
  if (c >= 0x3b1 && c <= 0x3c9 && c != 0x3c2) return c - 32;
  if (c >= 0x430 && c <= 0x44f) return c - 32;
  if (c >= 0x450 && c <= 0x45f) return c - 80;
  return c;
}

char32_t to_lower_cp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xc0 && c <= 0xde && c != 0xd7) return c + 32;
  if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
  if (c >= 0x410 && c <= 0x42f) return c + 32;
  if (c >= 0x400 && c <= 0x40f) return c + 80;
  return c;
}

bool is_cased(char32_t c) { return to_upper_cp(c) != c || to_lower_cp(c) != c; }

}  // namespace

std::string py_upper(std::string_view s) {
  std::u32string u;
  for (char32_t c : utf8_decode(s)) {
    if (c == 0xdf)
      u += U"SS";  // German sharp s
    else
      u += to_upper_cp(c);
  }
  return utf8_encode(u);
}

std::string py_lower(std::string_view s) {
  std::u32string u = utf8_decode(s);
  for (auto& c : u) c = to_lower_cp(c);
  return utf8_encode(u);
}

std::string py_title(std::string_view s) {
  std::u32string u = utf8_decode(s);
  bool prev_cased = false;
  for (auto& c : u) {
    if (is_cased(c)) {
      c = prev_cased ? to_lower_cp(c) : to_upper_cp(c);
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return utf8_encode(u);
}

std::string py_capitalize(std::string_view s) {
  std::u32string u = utf8_decode(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_upper_cp(u[i]) : to_lower_cp(u[i]);
  return utf8_encode(u);
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view with,
                       int64_t count) {
  // The result's size first: a few bytes of `s` and `with` can ask for terabytes.
  uint64_t hits = 0;
  if (old.empty()) {
    hits = utf8_length(s) + 1;
  } else {
    for (size_t p = s.find(old); p != std::string_view::npos; p = s.find(old, p + old.size()))
      ++hits;
  }
  charge_bytes(s.size());
  if (count >= 0) hits = std::min<uint64_t>(hits, static_cast<uint64_t>(count));
  const uint64_t removed = old.size() * hits;
  const uint64_t added = with.empty()                      ? 0
                         : hits > UINT64_MAX / with.size() ? UINT64_MAX
                                                           : hits * with.size();
  const uint64_t result = added > UINT64_MAX - s.size() ? UINT64_MAX : s.size() - removed + added;
  check_string_size(result);
  charge_bytes(result);
  std::string out;
  out.reserve(static_cast<size_t>(result));
  if (old.empty()) {
    // Python inserts `with` between every code point (and at both ends).
    std::u32string u = utf8_decode(s);
    int64_t n = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || n < count) {
        out += with;
        ++n;
      }
      if (i < u.size()) utf8_append(out, u[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t p = s.find(old, start);
    if (p == std::string_view::npos) break;
    out.append(s.substr(start, p - start));
    out.append(with);
    start = p + old.size();
    ++n;
  }
  out.append(s.substr(start));
  return out;
}

}  // namespace geniex::jinja
