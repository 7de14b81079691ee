// Builtin filters (jinja2.filters plus Hugging Face's tojson) and tests (jinja2.tests).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {
namespace {

const Value* arg(const CallArgs& a, size_t i, std::string_view name) { return a.get(i, name); }
bool arg_bool(const CallArgs& a, size_t i, std::string_view name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}
std::optional<std::string> arg_str(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return std::nullopt;
  return v->str();
}
int64_t arg_int(const CallArgs& a, size_t i, std::string_view name, int64_t dflt) {
  const Value* v = a.get(i, name);
  if (!v) return dflt;
  if (!v->is_int() && !v->is_bool()) type_error("integer argument expected, got " + v->type_name());
  return v->to_int();
}

std::string need_str(const Value& v) {
  if (v.is_undefined()) return "";
  return v.str();
}

// Attribute path "a.b.0" resolved like jinja2's make_attrgetter.
Value get_path(Evaluator& ev, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric ? ev.getitem(cur,
                               Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                  : ev.getitem(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value sort_key(Evaluator& ev, const Value& v, const std::optional<std::string>& attr,
               bool case_sensitive) {
  Value k = attr ? get_path(ev, v, *attr) : v;
  if (!case_sensitive && k.is_string()) return Value(py_lower(k.as_string()));
  return k;
}

Value f_abs(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.to_int() == INT64_MIN) fail(ErrorKind::kUnsupported, "integer overflow");
    return Value(v.to_int() < 0 ? -v.to_int() : v.to_int());
  }
  type_error("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Evaluator& ev, const Value& v, const CallArgs& a) {
  const Value* n = arg(a, 0, "name");
  if (!n) type_error("attr() missing argument");
  return ev.getattr(v, n->str());
}

Value f_batch(Evaluator& ev, const Value& v, const CallArgs& a) {
  int64_t n = arg_int(a, 0, "linecount", 1);
  if (n <= 0) type_error("batch size must be positive");
  const Value* fill = arg(a, 1, "fill_with");
  std::vector<Value> items = to_list(ev, v);
  // The last batch is filled up to `n`: charge what that makes before making it.
  const uint64_t padded = fill && !fill->is_none() && !items.empty()
                              ? (items.size() + static_cast<uint64_t>(n) - 1) /
                                    static_cast<uint64_t>(n) * static_cast<uint64_t>(n)
                              : items.size();
  charge_elements(padded, sizeof(Value));
  std::vector<Value> out, cur;
  for (auto& item : items) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill && !fill->is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Value f_capitalize(Evaluator&, const Value& v, const CallArgs&) {
  return Value(py_capitalize(need_str(v)));
}

Value f_center(Evaluator& ev, const Value& v, const CallArgs& a) {
  std::string s = need_str(v);
  int64_t width = arg_int(a, 0, "width", 80);
  auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  ev.check_size(static_cast<size_t>(width));
  int64_t pad = width - len;
  int64_t left = pad / 2 + (pad & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(pad - left), ' '));
}

Value f_default(Evaluator&, const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default_value");
  bool boolean = arg_bool(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value("");
  return v;
}

Value f_dictsort(Evaluator& ev, const Value& v, const CallArgs& a) {
  if (!v.is_dict()) type_error("dictsort requires a mapping");
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::string by = arg_str(a, 1, "by").value_or("key");
  bool rev = arg_bool(a, 2, "reverse", false);
  size_t pos = by == "key" ? 0 : by == "value" ? 1 : 2;
  if (pos == 2) type_error("You can only sort by either \"key\" or \"value\"");
  charge_elements(v.as_dict()->items.size(), 3 * sizeof(Value));
  std::vector<Value> items;
  for (const auto& [k, val] : v.as_dict()->items) items.push_back(Value::list({k, val}, true));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    Value kx = sort_key(ev, x.as_list()->items[pos], std::nullopt, cs);
    Value ky = sort_key(ev, y.as_list()->items[pos], std::nullopt, cs);
    return rev ? value_less(ky, kx) : value_less(kx, ky);
  });
  return Value::list(std::move(items));
}

Value f_escape(Evaluator& ev, const Value& v, const CallArgs&) {
  const std::string s = need_str(v);
  ev.check_size(s.size() + 4 * static_cast<uint64_t>(std::count_if(s.begin(), s.end(), [](char c) {
                             return c == '&' || c == '<' || c == '>' || c == '"' || c == '\'';
                           })));
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_first(Evaluator& ev, const Value& v, const CallArgs&) {
  std::vector<Value> items = to_list(ev, v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Evaluator& ev, const Value& v, const CallArgs&) {
  std::vector<Value> items = to_list(ev, v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_float(Evaluator&, const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  Value dflt = d ? *d : Value(0.0);
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    double r = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(r);
  }
  return dflt;
}

Value f_format(Evaluator&, const Value& v, const CallArgs& a) {
  Value args = a.positional.size() == 1 ? a.positional[0] : Value::list(a.positional, true);
  return Value(percent_format(need_str(v), args));
}

Value f_indent(Evaluator& ev, const Value& v, const CallArgs& a) {
  std::string s = need_str(v);
  const Value* w = arg(a, 0, "width");
  std::string ind =
      w && w->is_string()
          ? w->as_string()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(
                            w ? w->to_int() : 4, 0,
                            static_cast<int64_t>(ev.env().limits.max_output_bytes) + 1)),
                        ' ');
  bool first = arg_bool(a, 1, "first", false);
  bool blank = arg_bool(a, 2, "blank", false);
  // Every line may get the indent: check the result's size before building it.
  const uint64_t lines_n = static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n')) + 1;
  ev.check_size(s.size() + lines_n * ind.size());
  s += "\n";
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') {
      lines.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (first) rv = ind + rv;
  return Value(std::move(rv));
}

Value f_int(Evaluator&, const Value& v, const CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  Value dflt = d ? *d : Value(0);
  int64_t base = arg_int(a, 1, "base", 10);
  if (v.is_int() || v.is_bool()) return Value(v.to_int());
  if (v.is_float()) {
    double x = v.as_float();
    if (!std::isfinite(x) || std::fabs(x) > 9.2e18) return dflt;
    return Value(static_cast<int64_t>(x));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    std::string digits;
    for (char c : s)
      if (c != '_') digits += c;
    if (!digits.empty()) {
      char* end = nullptr;
      errno = 0;
      long long r = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
      if (end == digits.c_str() + digits.size() && errno == 0)
        return Value(static_cast<int64_t>(r));
      double x = std::strtod(digits.c_str(), &end);
      if (end == digits.c_str() + digits.size() && std::isfinite(x) && std::fabs(x) < 9.2e18)
        return Value(static_cast<int64_t>(x));
    }
  }
  return dflt;
}

Value f_items(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
  charge_elements(v.as_dict()->items.size(), 3 * sizeof(Value));
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict()->items) out.push_back(Value::list({k, val}, true));
  return Value::list(std::move(out));
}

Value f_join(Evaluator& ev, const Value& v, const CallArgs& a) {
  std::string sep = arg_str(a, 0, "d").value_or("");
  std::optional<std::string> attr = arg_str(a, 1, "attribute");
  std::string out;
  bool firstv = true;
  for (auto& item : to_list(ev, v)) {
    if (!firstv) out += sep;
    firstv = false;
    out += (attr ? get_path(ev, item, *attr) : item).str();
    if (out.size() > ev.env().limits.max_output_bytes) ev.check_size(out.size());
  }
  ev.check_size(out.size());
  return Value(std::move(out));
}

Value f_length(Evaluator&, const Value& v, const CallArgs&) {
  if (v.is_string()) return Value(static_cast<int64_t>(utf8_length(v.as_string())));
  if (v.is_list()) return Value(static_cast<int64_t>(v.as_list()->items.size()));
  if (v.is_dict()) return Value(static_cast<int64_t>(v.as_dict()->items.size()));
  if (v.is_undefined()) return Value(0);
  type_error("object of type '" + v.type_name() + "' has no len()");
}

Value f_list(Evaluator& ev, const Value& v, const CallArgs&) { return Value::list(to_list(ev, v)); }
Value f_lower(Evaluator&, const Value& v, const CallArgs&) { return Value(py_lower(need_str(v))); }
Value f_upper(Evaluator&, const Value& v, const CallArgs&) { return Value(py_upper(need_str(v))); }

Value f_map(Evaluator& ev, const Value& v, const CallArgs& a) {
  std::vector<Value> out;
  std::optional<std::string> attr;
  for (const auto& [k, val] : a.keyword)
    if (k == "attribute") attr = val.str();
  if (attr) {
    const Value* dflt = nullptr;
    for (const auto& [k, val] : a.keyword)
      if (k == "default") dflt = &val;
    for (auto& item : to_list(ev, v)) {
      Value r = get_path(ev, item, *attr);
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) return Value::list(to_list(ev, v));
  std::string name = a.positional[0].str();
  FilterFn f = find_filter(name);
  if (!f) fail(ErrorKind::kType, "No filter named '" + name + "'.");
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (auto& item : to_list(ev, v)) out.push_back(f(ev, item, rest));
  return Value::list(std::move(out));
}

Value minmax(Evaluator& ev, const Value& v, const CallArgs& a, bool want_max) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::optional<std::string> attr = arg_str(a, 1, "attribute");
  std::vector<Value> items = to_list(ev, v);
  if (items.empty())
    return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    Value ki = sort_key(ev, items[i], attr, cs), kb = sort_key(ev, items[best], attr, cs);
    if (want_max ? value_less(kb, ki) : value_less(ki, kb)) best = i;
  }
  return items[best];
}
Value f_max(Evaluator& ev, const Value& v, const CallArgs& a) { return minmax(ev, v, a, true); }
Value f_min(Evaluator& ev, const Value& v, const CallArgs& a) { return minmax(ev, v, a, false); }

Value select_impl(Evaluator& ev, const Value& v, const CallArgs& a, bool by_attr, bool keep) {
  size_t k = 0;
  std::optional<std::string> attr;
  if (by_attr) {
    if (a.positional.empty()) type_error("Missing parameter for attribute name");
    attr = a.positional[0].str();
    k = 1;
  }
  TestFn test = nullptr;
  CallArgs targs;
  if (k < a.positional.size()) {
    std::string name = a.positional[k].str();
    test = find_test(name);
    if (!test) fail(ErrorKind::kType, "No test named '" + name + "'.");
    targs.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(k + 1),
                            a.positional.end());
    targs.keyword = a.keyword;
  }
  std::vector<Value> out;
  for (auto& item : to_list(ev, v)) {
    Value subject = attr ? get_path(ev, item, *attr) : item;
    bool r = test ? test(ev, subject, targs) : subject.truthy();
    if (r == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value f_select(Evaluator& ev, const Value& v, const CallArgs& a) {
  return select_impl(ev, v, a, false, true);
}
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& a) {
  return select_impl(ev, v, a, false, false);
}
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& a) {
  return select_impl(ev, v, a, true, true);
}
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& a) {
  return select_impl(ev, v, a, true, false);
}

Value f_replace(Evaluator& ev, const Value& v, const CallArgs& a) {
  const Value* o = arg(a, 0, "old");
  const Value* n = arg(a, 1, "new");
  if (!o || !n) type_error("replace() missing arguments");
  const Value* c = arg(a, 2, "count");
  std::string r =
      py_replace(need_str(v), o->str(), n->str(), c && !c->is_none() ? c->to_int() : -1);
  ev.check_size(r.size());
  return Value(std::move(r));
}

Value f_reverse(Evaluator& ev, const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.as_string());
    std::reverse(u.begin(), u.end());
    return Value(utf8_encode(u));
  }
  std::vector<Value> items = to_list(ev, v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_round(Evaluator&, const Value& v, const CallArgs& a) {
  int64_t prec = arg_int(a, 0, "precision", 0);
  std::string method = arg_str(a, 1, "method").value_or("common");
  if (!v.is_number()) type_error("round() requires a number");
  double x = v.to_double();
  if (method == "common" && !v.is_float()) return Value(v.to_int());  // round(int) stays int
  if (method == "common") {
    if (prec == 0) return Value(std::nearbyint(x));
    if (prec < 0 || prec > 300 || !std::isfinite(x)) return Value(x);
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(prec), x);
    return Value(std::strtod(buf, nullptr));
  }
  if (method != "floor" && method != "ceil") type_error("method must be common, ceil or floor");
  double m = std::pow(10.0, static_cast<double>(prec));
  return Value((method == "floor" ? std::floor(x * m) : std::ceil(x * m)) / m);
}

Value f_safe(Evaluator&, const Value& v, const CallArgs&) { return v; }

Value f_sort(Evaluator& ev, const Value& v, const CallArgs& a) {
  bool rev = arg_bool(a, 0, "reverse", false);
  bool cs = arg_bool(a, 1, "case_sensitive", false);
  std::optional<std::string> attr = arg_str(a, 2, "attribute");
  std::vector<Value> items = to_list(ev, v);
  charge_elements(items.size(), 2 * sizeof(Value) + sizeof(std::pair<Value, size_t>));
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) keyed.emplace_back(sort_key(ev, items[i], attr, cs), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? value_less(y.first, x.first) : value_less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& k : keyed) out.push_back(items[k.second]);
  return Value::list(std::move(out));
}

Value f_string(Evaluator&, const Value& v, const CallArgs&) { return Value(need_str(v)); }

Value f_sum(Evaluator& ev, const Value& v, const CallArgs& a) {
  std::optional<std::string> attr = arg_str(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value acc = start ? *start : Value(0);
  for (auto& item : to_list(ev, v)) {
    Value x = attr ? get_path(ev, item, *attr) : item;
    if (!acc.is_number() || !x.is_number()) type_error("unsupported operand type(s) for +");
    if (acc.is_float() || x.is_float())
      acc = Value(acc.to_double() + x.to_double());
    else
      acc = Value(acc.to_int() + x.to_int());
  }
  return acc;
}

Value f_title(Evaluator&, const Value& v, const CallArgs&) {
  // jinja2: split on runs of [-\s({\[<], uppercase the first char of each piece, lowercase the
  // rest.
  std::u32string u = utf8_decode(need_str(v));
  bool at_start = true;
  std::string out;
  for (char32_t c : u) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c);
    std::string one;
    utf8_append(one, c);
    if (sep) {
      out += one;
      at_start = true;
    } else {
      out += at_start ? py_upper(one) : py_lower(one);
      at_start = false;
    }
  }
  return Value(std::move(out));
}

Value f_tojson(Evaluator& ev, const Value& v, const CallArgs& a) {
  JsonOptions o;
  const Value* ind = arg(a, 0, "indent");
  if (ind && !ind->is_none()) {
    if (ind->is_string())
      o.indent = ind->as_string();
    else
      o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(ind->to_int(), 0, 1000)), ' ');
    o.item_sep = ",";
  }
  for (const auto& [k, val] : a.keyword) {
    if (k == "ensure_ascii")
      o.ensure_ascii = val.truthy();
    else if (k == "sort_keys")
      o.sort_keys = val.truthy();
    else if (k == "separators" && val.is_list() && val.as_list()->items.size() == 2) {
      o.item_sep = val.as_list()->items[0].str();
      o.key_sep = val.as_list()->items[1].str();
    }
  }
  std::string r = python_json_dumps(v, o);
  ev.check_size(r.size());
  return Value(std::move(r));
}

Value f_trim(Evaluator&, const Value& v, const CallArgs& a) {
  return Value(py_strip(need_str(v), arg_str(a, 0, "chars"), true, true));
}

Value f_unique(Evaluator& ev, const Value& v, const CallArgs& a) {
  bool cs = arg_bool(a, 0, "case_sensitive", false);
  std::optional<std::string> attr = arg_str(a, 1, "attribute");
  std::vector<Value> out, seen;
  for (auto& item : to_list(ev, v)) {
    Value k = sort_key(ev, item, attr, cs);
    bool dup = false;
    for (const auto& s : seen)
      if (values_equal(s, k)) dup = true;
    if (!dup) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value f_wordcount(Evaluator&, const Value& v, const CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(need_str(v))) {
    bool w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             c == '_' || (c > 0x7f && !is_py_space(c));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

struct FilterEntry {
  const char* name;
  FilterFn fn;
};
const FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"first", f_first},
    {"float", f_float},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"sort", f_sort},
    {"string", f_string},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"unique", f_unique},
    {"upper", f_upper},
    {"wordcount", f_wordcount},
};

// ---- tests ----------------------------------------------------------------
const Value& test_arg(const CallArgs& a) {
  if (a.positional.empty()) type_error("test requires an argument");
  return a.positional[0];
}
bool t_defined(Evaluator&, const Value& v, const CallArgs&) { return !v.is_undefined(); }
bool t_undefined(Evaluator&, const Value& v, const CallArgs&) { return v.is_undefined(); }
bool t_none(Evaluator&, const Value& v, const CallArgs&) { return v.is_none(); }
bool t_boolean(Evaluator&, const Value& v, const CallArgs&) { return v.is_bool(); }
bool t_false(Evaluator&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
bool t_true(Evaluator&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
bool t_integer(Evaluator&, const Value& v, const CallArgs&) { return v.is_int(); }
bool t_float(Evaluator&, const Value& v, const CallArgs&) { return v.is_float(); }
bool t_number(Evaluator&, const Value& v, const CallArgs&) { return v.is_number(); }
bool t_string(Evaluator&, const Value& v, const CallArgs&) { return v.is_string(); }
bool t_mapping(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_dict() && !v.as_dict()->is_namespace;
}
bool t_iterable(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || (v.is_dict() && !v.as_dict()->is_namespace) ||
         v.is_undefined();
}
bool t_callable(Evaluator&, const Value& v, const CallArgs&) { return v.is_callable(); }
bool t_even(Evaluator&, const Value& v, const CallArgs&) {
  if (!v.is_int() && !v.is_bool()) type_error("even test requires an integer");
  return v.to_int() % 2 == 0;
}
bool t_odd(Evaluator&, const Value& v, const CallArgs&) {
  if (!v.is_int() && !v.is_bool()) type_error("odd test requires an integer");
  return v.to_int() % 2 != 0;
}
bool t_divisibleby(Evaluator&, const Value& v, const CallArgs& a) {
  const Value& n = test_arg(a);
  if (!v.is_number() || !n.is_number()) type_error("divisibleby requires numbers");
  if (n.to_double() == 0) fail(ErrorKind::kType, "integer division or modulo by zero");
  if (v.is_float() || n.is_float()) return std::fmod(v.to_double(), n.to_double()) == 0;
  return v.to_int() % n.to_int() == 0;
}
bool t_eq(Evaluator&, const Value& v, const CallArgs& a) { return values_equal(v, test_arg(a)); }
bool t_ne(Evaluator&, const Value& v, const CallArgs& a) { return !values_equal(v, test_arg(a)); }
bool t_lt(Evaluator&, const Value& v, const CallArgs& a) { return value_less(v, test_arg(a)); }
bool t_gt(Evaluator&, const Value& v, const CallArgs& a) { return value_less(test_arg(a), v); }
bool t_le(Evaluator&, const Value& v, const CallArgs& a) { return !value_less(test_arg(a), v); }
bool t_ge(Evaluator&, const Value& v, const CallArgs& a) { return !value_less(v, test_arg(a)); }
bool t_in(Evaluator& ev, const Value& v, const CallArgs& a) {
  const Value& c = test_arg(a);
  if (c.is_string()) {
    if (!v.is_string()) type_error("'in <string>' requires string as left operand");
    return c.as_string().find(v.as_string()) != std::string::npos;
  }
  for (const auto& x : ev.iterate(c))
    if (values_equal(x, v)) return true;
  return false;
}
bool t_sameas(Evaluator&, const Value& v, const CallArgs& a) {
  const Value& o = test_arg(a);
  if (v.is_list() && o.is_list()) return v.as_list() == o.as_list();
  if (v.is_dict() && o.is_dict()) return v.as_dict() == o.as_dict();
  if (v.is_none() || v.is_bool()) return values_equal(v, o) && v.type_name() == o.type_name();
  return false;
}
bool t_lower(Evaluator&, const Value& v, const CallArgs&) {
  std::string s = need_str(v);
  return py_lower(s) == s && py_upper(s) != s;
}
bool t_upper(Evaluator&, const Value& v, const CallArgs&) {
  std::string s = need_str(v);
  return py_upper(s) == s && py_lower(s) != s;
}
bool t_escaped(Evaluator&, const Value&, const CallArgs&) { return false; }
bool t_filter(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_string() && find_filter(v.as_string());
}
bool t_test(Evaluator&, const Value& v, const CallArgs&) {
  return v.is_string() && find_test(v.as_string());
}

struct TestEntry {
  const char* name;
  TestFn fn;
};
const TestEntry kTests[] = {
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"boolean", t_boolean},
    {"false", t_false},
    {"true", t_true},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"iterable", t_iterable},
    {"sequence", t_sequence},
    {"callable", t_callable},
    {"even", t_even},
    {"odd", t_odd},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"ne", t_ne},
    {"!=", t_ne},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"le", t_le},
    {"<=", t_le},
    {"ge", t_ge},
    {">=", t_ge},
    {"in", t_in},
    {"sameas", t_sameas},
    {"lower", t_lower},
    {"upper", t_upper},
    {"escaped", t_escaped},
    {"filter", t_filter},
    {"test", t_test},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters)
    if (name == f.name) return f.fn;
  return nullptr;
}

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests)
    if (name == t.name) return t.fn;
  return nullptr;
}

}  // namespace geniex::jinja
