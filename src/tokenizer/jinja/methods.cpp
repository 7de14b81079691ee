// Methods of str / dict / list values and the template globals.
#include <algorithm>
#include <chrono>
#include <ctime>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {
namespace {

std::optional<std::string> opt_str(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) type_error("argument must be str or None, not " + v->type_name());
  return v->as_string();
}

const std::string& req_str(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  if (!v) type_error("missing required argument '" + std::string(name) + "'");
  if (!v->is_string()) type_error("must be str, not " + v->type_name());
  return v->as_string();
}

bool affix_match(const std::string& s, const Value& what, bool prefix) {
  auto one = [&](const Value& p) {
    if (!p.is_string()) type_error("startswith/endswith first arg must be str or a tuple of str");
    const std::string& x = p.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (what.is_list()) {
    for (const auto& p : what.as_list()->items)
      if (one(p)) return true;
    return false;
  }
  return one(what);
}

// str.format with {}, {0} and {name} fields (no format specs or conversions).
std::string str_format(const std::string& fmt, const CallArgs& a) {
  charge_bytes(fmt.size());
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{') {
      size_t e = fmt.find('}', i);
      if (e == std::string::npos) type_error("Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, e - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos)
        fail(ErrorKind::kUnsupported, "str.format specs are not supported");
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_idx >= a.positional.size()) type_error("Replacement index out of range");
        v = &a.positional[auto_idx++];
      } else if (field.find_first_not_of("0123456789") == std::string::npos) {
        size_t k = std::stoul(field);
        if (k >= a.positional.size()) type_error("Replacement index out of range");
        v = &a.positional[k];
      } else {
        for (const auto& [k, val] : a.keyword)
          if (k == field) v = &val;
        if (!v) type_error("KeyError: '" + field + "'");
      }
      std::string piece = v->str();
      check_string_size(out.size() + piece.size());
      out += piece;
      i = e;
    } else if (c == '}') {
      type_error("Single '}' encountered in format string");
    } else {
      out += c;
    }
  }
  return out;
}

Value str_method(const std::string& s, std::string_view name, Evaluator& ev, const CallArgs& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value(py_strip(s, opt_str(a, 0, "chars"), name != "rstrip", name != "lstrip"));
  if (name == "split" || name == "rsplit") {
    const Value* m = a.get(1, "maxsplit");
    int64_t maxsplit = m ? m->to_int() : -1;
    if (name == "rsplit" && maxsplit >= 0)
      fail(ErrorKind::kUnsupported, "rsplit with maxsplit is not supported");
    std::vector<Value> out;
    for (auto& p : py_split(s, opt_str(a, 0, "sep"), maxsplit)) out.emplace_back(std::move(p));
    return Value::list(std::move(out));
  }
  if (name == "startswith" || name == "endswith") {
    const Value* p = a.get(0, "prefix");
    if (!p) type_error(std::string(name) + " takes at least 1 argument");
    return Value(affix_match(s, *p, name == "startswith"));
  }
  if (name == "upper") return Value(py_upper(s));
  if (name == "lower") return Value(py_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "replace") {
    const Value* c = a.get(2, "count");
    std::string r = py_replace(s, req_str(a, 0, "old"), req_str(a, 1, "new"), c ? c->to_int() : -1);
    ev.check_size(r.size());
    return Value(std::move(r));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const std::string& sub = req_str(a, 0, "sub");
    charge_bytes(s.size());
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    size_t p = name == "find" ? s.find(sub) : s.rfind(sub);
    if (p == std::string::npos) return Value(-1);
    return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, p))));
  }
  if (name == "join") {
    const Value* it = a.get(0, "iterable");
    if (!it) type_error("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const auto& x : ev.iterate(*it)) {
      if (!x.is_string())
        type_error("sequence item: expected str instance, " + x.type_name() + " found");
      if (!first) out += s;
      first = false;
      out += x.as_string();
      if (out.size() > ev.env().limits.max_output_bytes) ev.check_size(out.size());
    }
    ev.check_size(out.size());
    return Value(std::move(out));
  }
  if (name == "format") return Value(str_format(s, a));
  if (name == "removeprefix" || name == "removesuffix") {
    const std::string& x = req_str(a, 0, "affix");
    if (affix_match(s, Value(x), name == "removeprefix"))
      return Value(name == "removeprefix" ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
    return Value(s);
  }
  if (name == "splitlines") {
    charge_bytes(s.size());
    charge_elements(static_cast<uint64_t>(std::count_if(
                        s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; })) +
                        1,
                    sizeof(Value));
    std::vector<Value> out;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\n' || s[i] == '\r') {
        out.emplace_back(s.substr(start, i - start));
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
        start = i + 1;
      }
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return Value::list(std::move(out));
  }
  std::u32string u = utf8_decode(s);
  auto all = [&](auto pred) {
    if (u.empty()) return Value(false);
    for (char32_t c : u)
      if (!pred(c)) return Value(false);
    return Value(true);
  };
  if (name == "isdigit") return all([](char32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isspace") return all([](char32_t c) { return is_py_space(c); });
  if (name == "isalpha") return all([](char32_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; });
  if (name == "isalnum")
    return all(
        [](char32_t c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); });
  if (name == "islower") return Value(py_lower(s) == s && py_upper(s) != s);
  if (name == "isupper") return Value(py_upper(s) == s && py_lower(s) != s);
  type_error("'str' object has no attribute '" + std::string(name) + "'");
}

bool is_str_method(std::string_view n) {
  static const char* kNames[] = {
      "strip",   "lstrip",  "rstrip",  "split",        "rsplit",       "startswith", "endswith",
      "upper",   "lower",   "title",   "capitalize",   "replace",      "find",       "rfind",
      "count",   "join",    "format",  "removeprefix", "removesuffix", "splitlines", "isdigit",
      "isspace", "isalpha", "isalnum", "islower",      "isupper"};
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}

Value dict_method(const Value& obj, std::string_view name, const CallArgs& a) {
  const auto& d = *obj.as_dict();
  if (name == "items" || name == "keys" || name == "values") {
    charge_elements(d.items.size(), 3 * sizeof(Value));
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) {
      if (name == "items")
        out.push_back(Value::list({k, v}, true));
      else
        out.push_back(name == "keys" ? k : v);
    }
    return Value::list(std::move(out));
  }
  // get
  const Value* key = a.get(0, "key");
  if (!key) type_error("get expected at least 1 argument, got 0");
  if (const Value* v = d.find(*key)) return *v;
  const Value* dflt = a.get(1, "default");
  return dflt ? *dflt : Value::none();
}

}  // namespace

Value get_method(const Value& obj, std::string_view name) {
  std::string n(name);
  if (obj.is_string() && is_str_method(name)) {
    Value self = obj;
    return Value::function(n, [self, n](Evaluator& ev, const CallArgs& a) {
      return str_method(self.as_string(), n, ev, a);
    });
  }
  if (obj.is_dict() && (name == "items" || name == "keys" || name == "values" || name == "get")) {
    Value self = obj;
    return Value::function(
        n, [self, n](Evaluator&, const CallArgs& a) { return dict_method(self, n, a); });
  }
  if (obj.is_dict() || obj.is_list()) {
    static const char* kMutators[] = {"append", "extend",     "insert", "pop",
                                      "remove", "clear",      "sort",   "reverse",
                                      "update", "setdefault", "popitem"};
    for (const char* m : kMutators) {
      if (name == m) {
        std::string what = obj.type_name();
        return Value::function(n, [n, what](Evaluator&, const CallArgs&) -> Value {
          type_error("access to attribute '" + n + "' of '" + what + "' object is unsafe.");
        });
      }
    }
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + n + "'");
}

std::vector<Value> to_list(Evaluator& ev, const Value& v) { return ev.iterate(v); }

namespace {

Value g_range(Evaluator& ev, const CallArgs& a) {
  std::vector<int64_t> p;
  for (const auto& v : a.positional) {
    if (!v.is_int() && !v.is_bool())
      type_error("'" + v.type_name() + "' object cannot be interpreted as an integer");
    p.push_back(v.to_int());
  }
  if (p.empty() || p.size() > 3) type_error("range expected 1 to 3 arguments");
  int64_t start = p.size() == 1 ? 0 : p[0];
  int64_t stop = p.size() == 1 ? p[0] : p[1];
  int64_t step = p.size() == 3 ? p[2] : 1;
  if (step == 0) type_error("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= ev.env().limits.max_range)
      fail(ErrorKind::kLimit, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                                  std::to_string(ev.env().limits.max_range) + ").");
    out.emplace_back(i);
    ev.charge(sizeof(Value));
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::list(std::move(out));
}

Value g_dict(Evaluator& ev, const CallArgs& a, bool ns) {
  Value d = Value::dict();
  d.as_dict()->is_namespace = ns;
  if (a.positional.size() > 1) type_error("expected at most 1 positional argument");
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict()->items) d.as_dict()->set(k, v);
    } else {
      for (const auto& pair : ev.iterate(src)) {
        std::vector<Value> kv = ev.iterate(pair);
        if (kv.size() != 2) type_error("dictionary update sequence element has wrong length");
        d.as_dict()->set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.keyword) d.as_dict()->set(Value(k), v);
  return d;
}

Value g_strftime_now(Evaluator& ev, const CallArgs& a) {
  const Value* f = a.get(0, "format");
  if (!f || !f->is_string()) type_error("strftime_now() requires a format string");
  std::tm tm{};
  if (ev.env().now) {
    tm = *ev.env().now;
  } else {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    localtime_r(&t, &tm);
  }
  if (f->as_string().size() > 1024) fail(ErrorKind::kLimit, "strftime format too long");
  std::string buf(f->as_string().size() * 64 + 64, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), f->as_string().c_str(), &tm);
  buf.resize(n);
  return Value(std::move(buf));
}

struct GlobalTable {
  std::vector<std::pair<std::string, Value>> items;
  GlobalTable() {
    items.emplace_back("range", Value::function("range", g_range));
    items.emplace_back("dict", Value::function("dict", [](Evaluator& ev, const CallArgs& a) {
                         return g_dict(ev, a, false);
                       }));
    items.emplace_back("namespace",
                       Value::function("namespace", [](Evaluator& ev, const CallArgs& a) {
                         return g_dict(ev, a, true);
                       }));
    items.emplace_back(
        "raise_exception",
        Value::function("raise_exception", [](Evaluator&, const CallArgs& a) -> Value {
          const Value* m = a.get(0, "message");
          fail(ErrorKind::kRaised, m ? m->str() : std::string());
        }));
    items.emplace_back("strftime_now", Value::function("strftime_now", g_strftime_now));
  }
};

}  // namespace

const Value* find_global(std::string_view name) {
  static const GlobalTable table;
  for (const auto& [k, v] : table.items)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace geniex::jinja
