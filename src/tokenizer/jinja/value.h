// Value model of the Jinja interpreter: Python-like dynamic values.
// Lists and dicts are shared by reference (as in Python); only namespaces are ever mutated
// after construction, so values coming from the render context can be shared across threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace geniex::jinja {

class Value;
class Evaluator;

struct ListData {
  ListData() = default;
  /// Iterative (see release_items): a template can nest lists 100,000 deep.
  ~ListData();
  ListData(const ListData&) = delete;
  ListData& operator=(const ListData&) = delete;

  std::vector<Value> items;
  bool is_tuple = false;  ///< prints as (a, b) instead of [a, b]
};

struct DictData {
  DictData() = default;
  ~DictData();  ///< iterative, like ~ListData
  DictData(const DictData&) = delete;
  DictData& operator=(const DictData&) = delete;

  std::vector<std::pair<Value, Value>> items;  ///< insertion order, unique keys
  bool is_namespace = false;                   ///< created by namespace(); attribute-assignable

  [[nodiscard]] const Value* find(const Value& key) const;
  [[nodiscard]] const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

/// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  /// Positional argument `i`, else keyword `name`, else nullptr.
  [[nodiscard]] const Value* get(size_t i, std::string_view name) const;
};

/// A callable: builtin global, bound method, or macro. Throws JinjaError on failure.
struct Function {
  std::string name;
  bool is_macro = false;
  std::function<Value(Evaluator&, const CallArgs&)> fn;
};

struct Undefined {
  std::string name;  ///< what was looked up, for error messages
};
struct None {};

class Value {
 public:
  using List = std::shared_ptr<ListData>;
  using Dict = std::shared_ptr<DictData>;
  using Func = std::shared_ptr<const Function>;
  /// Strings are immutable and shared: copying a Value (a variable lookup, a list repeated,
  /// a loop item) never copies the text, which a template could otherwise multiply freely.
  using Str = std::shared_ptr<const std::string>;

  Value() : v_(Undefined{}) {}
  Value(None) : v_(None{}) {}                                                      // NOLINT
  Value(bool b) : v_(b) {}                                                         // NOLINT
  Value(int64_t i) : v_(i) {}                                                      // NOLINT
  Value(int i) : v_(static_cast<int64_t>(i)) {}                                    // NOLINT
  Value(double d) : v_(d) {}                                                       // NOLINT
  Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                                  // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}                             // NOLINT
  Value(List l) : v_(std::move(l)) {}                                              // NOLINT
  Value(Dict d) : v_(std::move(d)) {}                                              // NOLINT
  Value(Func f) : v_(std::move(f)) {}                                              // NOLINT

  static Value undefined(std::string name = {}) {
    Value v;
    v.v_ = Undefined{std::move(name)};
    return v;
  }
  static Value none() { return Value(None{}); }
  static Value list(std::vector<Value> items = {}, bool tuple = false);
  static Value dict();
  static Value function(std::string name, std::function<Value(Evaluator&, const CallArgs&)> fn,
                        bool is_macro = false);

  [[nodiscard]] bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  [[nodiscard]] bool is_none() const { return std::holds_alternative<None>(v_); }
  [[nodiscard]] bool is_bool() const { return std::holds_alternative<bool>(v_); }
  [[nodiscard]] bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  [[nodiscard]] bool is_float() const { return std::holds_alternative<double>(v_); }
  /// int, float or bool (Python's numbers.Number).
  [[nodiscard]] bool is_number() const { return is_int() || is_float() || is_bool(); }
  [[nodiscard]] bool is_string() const { return std::holds_alternative<Str>(v_); }
  [[nodiscard]] bool is_list() const { return std::holds_alternative<List>(v_); }
  [[nodiscard]] bool is_dict() const { return std::holds_alternative<Dict>(v_); }
  [[nodiscard]] bool is_callable() const { return std::holds_alternative<Func>(v_); }

  [[nodiscard]] bool as_bool() const { return std::get<bool>(v_); }
  [[nodiscard]] int64_t as_int() const { return std::get<int64_t>(v_); }
  [[nodiscard]] double as_float() const { return std::get<double>(v_); }
  [[nodiscard]] const std::string& as_string() const { return *std::get<Str>(v_); }
  [[nodiscard]] const List& as_list() const { return std::get<List>(v_); }
  [[nodiscard]] const Dict& as_dict() const { return std::get<Dict>(v_); }
  [[nodiscard]] const Func& as_func() const { return std::get<Func>(v_); }
  [[nodiscard]] const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }

  /// Integer value of an int or bool (Python treats bool as int).
  [[nodiscard]] int64_t to_int() const { return is_bool() ? (as_bool() ? 1 : 0) : as_int(); }
  /// Numeric value of int, bool or float.
  [[nodiscard]] double to_double() const;

  /// Python truthiness.
  [[nodiscard]] bool truthy() const;
  /// Python str(): what `{{ value }}` prints. Undefined prints as "".
  [[nodiscard]] std::string str() const;
  /// Python repr().
  [[nodiscard]] std::string repr() const;
  /// Python type name for messages: 'int', 'str', 'list', ...
  [[nodiscard]] std::string type_name() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, Str, List, Dict, Func> v_;
};

/// The lists and dicts created while a render runs, emptied when it ends. Templates can build
/// reference cycles (`{% set ns.x = (ns, 1) %}`: a namespace holding itself), which shared
/// ownership alone would leak; emptying every container the render made breaks them all. While
/// one is alive on a thread, Value::list / Value::dict register their containers with it.
class ContainerArena {
 public:
  ContainerArena();
  ~ContainerArena();
  ContainerArena(const ContainerArena&) = delete;
  ContainerArena& operator=(const ContainerArena&) = delete;

  /// Registers `c` with the thread's current arena, if any.
  static void track(const std::shared_ptr<ListData>& c);
  static void track(const std::shared_ptr<DictData>& c);

 private:
  std::vector<std::weak_ptr<ListData>> lists_;
  std::vector<std::weak_ptr<DictData>> dicts_;
  ContainerArena* prev_ = nullptr;
};

/// Python ==, deep and numeric-aware (1 == 1.0 == True).
bool values_equal(const Value& a, const Value& b);

}  // namespace geniex::jinja
