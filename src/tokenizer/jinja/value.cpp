// Value model: construction, truthiness, printing, equality.
#include "tokenizer/jinja/value.h"

#include <algorithm>
#include <unordered_set>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {

namespace {

// Values whose destruction is pending on this thread while an outer release runs.
thread_local std::vector<Value>* g_pending = nullptr;

// Destroys `items` without recursing through nested containers: the first (outermost) release
// on a thread drains a work list; a container destroyed while it runs hands its items to that
// list instead of destroying them itself. So dropping a list nested 100,000 deep takes constant
// stack.
void release_items(std::vector<Value>&& items) {
  if (items.empty()) return;
  if (g_pending != nullptr) {
    for (auto& v : items) g_pending->push_back(std::move(v));
    items.clear();
    return;
  }
  std::vector<Value> pending = std::move(items);
  g_pending = &pending;
  while (!pending.empty()) {
    Value v = std::move(pending.back());
    pending.pop_back();
    // `v` is destroyed here; a container it held last feeds `pending`.
  }
  g_pending = nullptr;
}

}  // namespace

ListData::~ListData() { release_items(std::move(items)); }

DictData::~DictData() {
  if (items.empty()) return;
  std::vector<Value> values;
  values.reserve(items.size() * 2);
  for (auto& [k, v] : items) {
    values.push_back(std::move(k));
    values.push_back(std::move(v));
  }
  items.clear();
  release_items(std::move(values));
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  charge_steps(items.size());
  for (const auto& [k, v] : items)
    if (values_equal(k, key)) return &v;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  charge_steps(items.size());
  for (const auto& [k, v] : items)
    if (k.is_string() && k.as_string() == key) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  charge_steps(items.size());
  for (auto& [k, v] : items) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::get(size_t i, std::string_view name) const {
  if (i < positional.size()) return &positional[i];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

namespace {
thread_local ContainerArena* g_arena = nullptr;
}  // namespace

ContainerArena::ContainerArena() : prev_(g_arena) { g_arena = this; }

ContainerArena::~ContainerArena() {
  g_arena = prev_;
  // Hold every survivor first, then empty them, then let go: no container's destruction can
  // recurse through a long chain of others (each is empty by then).
  std::vector<std::shared_ptr<ListData>> lists;
  std::vector<std::shared_ptr<DictData>> dicts;
  for (auto& w : lists_) {
    if (auto p = w.lock()) lists.push_back(std::move(p));
  }
  for (auto& w : dicts_) {
    if (auto p = w.lock()) dicts.push_back(std::move(p));
  }
  std::vector<Value> dead_items;
  for (auto& l : lists) {
    for (auto& v : l->items) dead_items.push_back(std::move(v));
    l->items.clear();
  }
  for (auto& d : dicts) {
    for (auto& kv : d->items) dead_items.push_back(std::move(kv.second));
    d->items.clear();
  }
  dead_items.clear();
}

void ContainerArena::track(const std::shared_ptr<ListData>& c) {
  if (g_arena != nullptr) g_arena->lists_.push_back(c);
}

void ContainerArena::track(const std::shared_ptr<DictData>& c) {
  if (g_arena != nullptr) g_arena->dicts_.push_back(c);
}

Value Value::list(std::vector<Value> items, bool tuple) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->is_tuple = tuple;
  ContainerArena::track(l);
  return Value(std::move(l));
}

Value Value::dict() {
  auto d = std::make_shared<DictData>();
  ContainerArena::track(d);
  return Value(std::move(d));
}

Value Value::function(std::string name, std::function<Value(Evaluator&, const CallArgs&)> fn,
                      bool is_macro) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->fn = std::move(fn);
  f->is_macro = is_macro;
  return Value(Func(std::move(f)));
}

double Value::to_double() const {
  if (is_float()) return as_float();
  return static_cast<double>(to_int());
}

bool Value::truthy() const {
  if (is_undefined() || is_none()) return false;
  if (is_bool()) return as_bool();
  if (is_int()) return as_int() != 0;
  if (is_float()) return as_float() != 0.0;
  if (is_string()) return !as_string().empty();
  if (is_list()) return !as_list()->items.empty();
  if (is_dict()) return !as_dict()->items.empty();
  return true;
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_float()) return "float";
  if (is_string()) return "str";
  if (is_list()) return as_list()->is_tuple ? "tuple" : "list";
  if (is_dict()) return as_dict()->is_namespace ? "Namespace" : "dict";
  return as_func()->is_macro ? "Macro" : "builtin_function_or_method";
}

std::string Value::str() const {
  if (is_undefined()) return "";
  if (is_string()) return as_string();
  return repr();
}

namespace {

// Python's repr of containers: a container met again while it is being printed prints as
// [...] / {...} (CPython's Py_ReprEnter), so a namespace holding itself prints in finite space.
void repr_into(const Value& v, std::string& out, std::unordered_set<const void*>& open) {
  NestGuard nest;
  charge_steps(1);
  if (!v.is_list() && !v.is_dict()) {
    std::string s = v.repr();
    check_string_size(out.size() + s.size());
    out += s;
    return;
  }
  const void* id = v.is_list() ? static_cast<const void*>(v.as_list().get())
                               : static_cast<const void*>(v.as_dict().get());
  const bool again = !open.insert(id).second;
  struct Pop {
    std::unordered_set<const void*>& o;
    const void* id;
    bool again;
    ~Pop() {
      if (!again) o.erase(id);
    }
  } pop{open, id, again};
  if (v.is_list()) {
    const auto& l = *v.as_list();
    if (again) {
      out += l.is_tuple ? "(...)" : "[...]";
      return;
    }
    out += l.is_tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      repr_into(l.items[i], out, open);
    }
    if (l.is_tuple && l.items.size() == 1) out += ",";
    out += l.is_tuple ? ")" : "]";
    return;
  }
  const auto& d = *v.as_dict();
  out += d.is_namespace ? "<Namespace {" : "{";
  if (again) {
    out += d.is_namespace ? "...}>" : "...}";
    return;
  }
  for (size_t i = 0; i < d.items.size(); ++i) {
    if (i) out += ", ";
    repr_into(d.items[i].first, out, open);
    out += ": ";
    repr_into(d.items[i].second, out, open);
  }
  out += d.is_namespace ? "}>" : "}";
}

}  // namespace

std::string Value::repr() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "None";
  if (is_bool()) return as_bool() ? "True" : "False";
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return python_float_repr(as_float());
  if (is_string()) {
    // At most 4 bytes per byte of an already bounded string.
    std::string r = python_string_repr(as_string());
    check_string_size(r.size());
    charge_bytes(r.size());
    return r;
  }
  if (is_list() || is_dict()) {
    std::string out;
    std::unordered_set<const void*> open;
    repr_into(*this, out, open);
    check_string_size(out.size());
    charge_bytes(out.size());
    return out;
  }
  const auto& f = *as_func();
  if (f.is_macro) return "<Macro '" + f.name + "'>";
  return "<built-in function " + f.name + ">";
}

bool values_equal(const Value& a, const Value& b) {
  NestGuard nest;
  charge_steps(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    return a.to_int() == b.to_int();
  }
  if (a.is_string() && b.is_string()) {
    charge_bytes(std::min(a.as_string().size(), b.as_string().size()));
    return a.as_string() == b.as_string();
  }
  if (a.is_none() && b.is_none()) return true;
  if (a.is_undefined() && b.is_undefined()) return true;
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list()->items;
    const auto& y = b.as_list()->items;
    if (a.as_list() == b.as_list()) return true;  // Python compares identical items as equal
    if (a.as_list()->is_tuple != b.as_list()->is_tuple) return false;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!values_equal(x[i], y[i])) return false;
    return true;
  }
  if (a.is_dict() && b.is_dict()) {
    if (a.as_dict() == b.as_dict()) return true;
    if (a.as_dict()->is_namespace || b.as_dict()->is_namespace) return false;
    const auto& x = a.as_dict()->items;
    const auto& y = *b.as_dict();
    if (x.size() != y.items.size()) return false;
    for (const auto& [k, v] : x) {
      const Value* o = y.find(k);
      if (!o || !values_equal(v, *o)) return false;
    }
    return true;
  }
  if (a.is_callable() && b.is_callable()) return a.as_func() == b.as_func();
  return false;
}

}  // namespace geniex::jinja
