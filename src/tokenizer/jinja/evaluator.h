// Evaluator: renders an AST against a context. One Evaluator per render call; the AST and the
// context are only read, so concurrent renders of one Template are safe.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace geniex::jinja {

class RenderBudget;

/// Budgets that keep hostile templates from exhausting the machine.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;     ///< any rendered or built string
  int max_call_depth = 64;                        ///< nested macro / caller / filter-block calls
  uint64_t max_loop_iterations = 1'000'000;       ///< loop bodies run, all loops together
  size_t max_range = 100'000;                     ///< range() length (jinja2's sandbox MAX_RANGE)
  size_t max_collection = 1'000'000;              ///< elements of a list built by * or +
  uint64_t max_work_bytes = uint64_t{256} << 20;  ///< bytes built, copied or scanned, all together
  uint64_t max_steps = 50'000'000;  ///< expression nodes evaluated + elements visited, all together
};

/// Environment of one render: limits and the time strftime_now() sees.
struct RenderEnv {
  RenderLimits limits;
  std::optional<std::tm> now;  ///< fixed local time for strftime_now(); nullopt: the clock
};

using FilterFn = Value (*)(Evaluator&, const Value&, const CallArgs&);
using TestFn = bool (*)(Evaluator&, const Value&, const CallArgs&);

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

class Evaluator {
 public:
  Evaluator(const RenderEnv& env, const Value& context);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// Renders a template body; throws JinjaError.
  std::string render(const Body& body);

  // ---- services for filters, tests, methods --------------------------------
  Value call(const Value& callee, const CallArgs& args);
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  /// Items a for loop visits: list items, dict keys, string characters; throws for non-iterables.
  std::vector<Value> iterate(const Value& v);
  /// Checks a string about to be built against max_output_bytes and charges it to the work budget.
  void check_size(size_t bytes);
  /// Charges `bytes` of work (strings built, items copied or scanned) against max_work_bytes.
  void charge(uint64_t bytes);
  /// Charges `n` steps (elements visited) against max_steps.
  void charge_steps(uint64_t n);
  void count_iterations(uint64_t n);
  const RenderEnv& env() const { return env_; }

 private:
  struct Scope {
    std::vector<std::pair<std::string, Value>> vars;
    Scope* parent = nullptr;
    Value* find(std::string_view name);
    void set(std::string_view name, Value v);
  };
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body, Scope& scope);
  Flow exec(const Stmt& s, Scope& scope);
  void exec_for(const Stmt& s, Scope& scope);
  void assign(const Target& t, Value v, Scope& scope);
  Value eval(const Expr& e, Scope& scope);
  Value eval_binary(const std::string& op, const Value& a, const Value& b);
  bool compare(const std::string& op, const Value& a, const Value& b);
  CallArgs eval_args(const Expr& e, Scope& scope, size_t first);
  Value lookup(std::string_view name, Scope& scope);
  Value make_macro(const Stmt& s);
  Value invoke_macro(const Stmt& s, const CallArgs& args, const Value* caller);
  std::string capture(const Body& body, Scope& scope);
  void emit(std::string_view text);

  const RenderEnv& env_;
  const Value& context_;
  std::unique_ptr<RenderBudget> budget_;  ///< this thread's budget while the evaluator lives
  Scope root_;
  std::string* out_ = nullptr;
  int depth_ = 0;
  uint64_t iterations_ = 0;
  SourcePos cur_pos_;
};

/// Builtin global functions (range, dict, namespace, raise_exception, strftime_now, ...).
const Value* find_global(std::string_view name);
/// Bound method `name` of a str / dict / list value, or undefined.
Value get_method(const Value& obj, std::string_view name);
/// Python list(value) for filters: strings to characters, dicts to keys.
std::vector<Value> to_list(Evaluator& ev, const Value& v);
/// Python printf-style `fmt % args` (%s %r %d %i %f %e %g %%); args: a tuple or one value.
std::string percent_format(const std::string& fmt, const Value& args);
/// Python-style ordering used by sort/min/max/dictsort; throws for unorderable values.
bool value_less(const Value& a, const Value& b);

}  // namespace geniex::jinja
