// Statement execution and expression evaluation with jinja2's scoping:
// `if` shares its scope, each loop iteration and each macro call gets a child scope.
#include "tokenizer/jinja/evaluator.h"

#include <cmath>
#include <limits>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {

Value* Evaluator::Scope::find(std::string_view name) {
  for (Scope* s = this; s; s = s->parent)
    for (auto& [k, v] : s->vars)
      if (k == name) return &v;
  return nullptr;
}

void Evaluator::Scope::set(std::string_view name, Value v) {
  for (auto& [k, val] : vars) {
    if (k == name) {
      val = std::move(v);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(v));
}

Evaluator::Evaluator(const RenderEnv& env, const Value& context)
    : env_(env), context_(context), budget_(std::make_unique<RenderBudget>(env.limits)) {}

Evaluator::~Evaluator() = default;

std::string Evaluator::render(const Body& body) {
  std::string out;
  out_ = &out;
  try {
    exec_body(body, root_);
  } catch (JinjaError& e) {
    e.set_pos_if_unknown(cur_pos_);
    throw;
  }
  return out;
}

void Evaluator::check_size(size_t bytes) {
  check_string_size(bytes);
  charge(bytes);
}

void Evaluator::charge(uint64_t bytes) { budget_->charge_bytes(bytes); }

void Evaluator::charge_steps(uint64_t n) { budget_->charge_steps(n); }

void Evaluator::count_iterations(uint64_t n) {
  iterations_ += n;
  if (iterations_ > env_.limits.max_loop_iterations)
    fail(ErrorKind::kLimit,
         "more than " + std::to_string(env_.limits.max_loop_iterations) + " loop iterations");
}

void Evaluator::emit(std::string_view text) {
  if (out_->size() + text.size() > env_.limits.max_output_bytes)
    fail(ErrorKind::kLimit,
         "output exceeds " + std::to_string(env_.limits.max_output_bytes) + " bytes");
  charge(text.size());
  out_->append(text);
}

std::string Evaluator::capture(const Body& body, Scope& scope) {
  if (++depth_ > env_.limits.max_call_depth) fail(ErrorKind::kLimit, "maximum call depth exceeded");
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    --depth_;
    throw;
  }
  out_ = saved;
  --depth_;
  return buf;
}

Evaluator::Flow Evaluator::exec_body(const Body& body, Scope& scope) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s, Scope& scope) {
  NestGuard nest;
  charge_steps(1);
  cur_pos_ = s.pos;
  switch (s.kind) {
    case StmtKind::kText: emit(s.text); break;
    case StmtKind::kOutput: {
      Value v = eval(*s.expr, scope);
      if (v.is_string())
        emit(v.as_string());
      else
        emit(v.str());
      break;
    }
    case StmtKind::kIf:
      for (const auto& [cond, body] : s.branches)
        if (eval(*cond, scope).truthy()) return exec_body(body, scope);
      return exec_body(s.else_body, scope);
    case StmtKind::kFor: exec_for(s, scope); break;
    case StmtKind::kSet: assign(s.target, eval(*s.expr, scope), scope); break;
    case StmtKind::kSetBlock: {
      Value v(capture(s.body, scope));
      if (s.expr) {
        // The filter chain was parsed with a null subject at its root.
        std::vector<const Expr*> chain;
        for (const Expr* f = s.expr.get(); f; f = f->children[0].get()) chain.push_back(f);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs args = eval_args(**it, scope, 1);
          v = find_filter((*it)->name)(*this, v, args);
        }
      }
      assign(s.target, std::move(v), scope);
      break;
    }
    case StmtKind::kFilterBlock: {
      Value v(capture(s.body, scope));
      std::vector<const Expr*> chain;
      for (const Expr* f = s.expr.get(); f; f = f->children[0].get()) chain.push_back(f);
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        CallArgs args = eval_args(**it, scope, 1);
        v = find_filter((*it)->name)(*this, v, args);
      }
      emit(v.str());
      break;
    }
    case StmtKind::kMacro: scope.set(s.text, make_macro(s)); break;
    case StmtKind::kCallBlock: {
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.children[0], scope);
      CallArgs args = eval_args(call_expr, scope, 1);
      // caller() renders the block body with its own parameters.
      Scope* outer = &scope;
      const Stmt* stmt = &s;
      Value caller = Value::function(
          "caller",
          [outer, stmt](Evaluator& ev, const CallArgs& a) -> Value {
            Scope local;
            local.parent = outer;
            for (size_t i = 0; i < stmt->params.size(); ++i) {
              const Value* v = a.get(i, stmt->params[i]);
              if (v)
                local.set(stmt->params[i], *v);
              else if (stmt->defaults[i])
                local.set(stmt->params[i], ev.eval(*stmt->defaults[i], local));
              else
                local.set(stmt->params[i],
                          Value::undefined("'" + stmt->params[i] + "' is undefined"));
            }
            return Value(ev.capture(stmt->body, local));
          },
          true);
      args.keyword.emplace_back("caller", caller);
      cur_pos_ = s.pos;
      emit(call(callee, args).str());
      break;
    }
    case StmtKind::kBreak: return Flow::kBreak;
    case StmtKind::kContinue: return Flow::kContinue;
    case StmtKind::kScope: {
      // transformers implements {% generation %} as a call block: a child scope.
      Scope local;
      local.parent = &scope;
      emit(capture(s.body, local));
      break;
    }
  }
  return Flow::kNormal;
}

void Evaluator::assign(const Target& t, Value v, Scope& scope) {
  if (!t.attr.empty()) {
    Value* obj = scope.find(t.names[0]);
    Value target = obj ? *obj : lookup(t.names[0], scope);
    if (!target.is_dict() || !target.as_dict()->is_namespace)
      fail(ErrorKind::kType, "cannot assign attribute on non-namespace object");
    target.as_dict()->set(Value(t.attr), std::move(v));
    return;
  }
  if (!t.is_tuple) {
    scope.set(t.names[0], std::move(v));
    return;
  }
  std::vector<Value> items = iterate(v);
  if (items.size() != t.names.size())
    fail(ErrorKind::kType,
         items.size() < t.names.size()
             ? "not enough values to unpack (expected " + std::to_string(t.names.size()) +
                   ", got " + std::to_string(items.size()) + ")"
             : "too many values to unpack (expected " + std::to_string(t.names.size()) + ")");
  for (size_t i = 0; i < items.size(); ++i) scope.set(t.names[i], std::move(items[i]));
}

std::vector<Value> Evaluator::iterate(const Value& v) {
  if (v.is_list()) {
    charge_elements(v.as_list()->items.size(), sizeof(Value));
    charge_steps(v.as_list()->items.size());
    return v.as_list()->items;
  }
  if (v.is_dict()) {
    charge_elements(v.as_dict()->items.size(), sizeof(Value));
    charge_steps(v.as_dict()->items.size());
    std::vector<Value> keys;
    for (const auto& kv : v.as_dict()->items) keys.push_back(kv.first);
    return keys;
  }
  if (v.is_string()) {
    // One Value per code point (at most one per byte) plus the decoded copy.
    charge_elements(v.as_string().size(), sizeof(Value) + sizeof(char32_t));
    charge_steps(v.as_string().size());
    std::vector<Value> chars;
    for (char32_t c : utf8_decode(v.as_string())) {
      std::string s;
      utf8_append(s, c);
      chars.emplace_back(std::move(s));
    }
    return chars;
  }
  if (v.is_undefined()) return {};
  type_error("'" + v.type_name() + "' object is not iterable");
}

void Evaluator::exec_for(const Stmt& s, Scope& scope) {
  std::vector<Value> items = iterate(eval(*s.expr, scope));
  if (s.cond) {
    std::vector<Value> kept;
    for (auto& item : items) {
      count_iterations(1);
      Scope local;
      local.parent = &scope;
      assign(s.target, item, local);
      if (eval(*s.cond, local).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    Scope local;
    local.parent = &scope;
    exec_body(s.else_body, local);
    return;
  }
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    count_iterations(1);
    Scope local;
    local.parent = &scope;
    auto loop = std::make_shared<DictData>();
    ContainerArena::track(loop);
    auto add = [&](const char* k, Value v) { loop->items.emplace_back(Value(k), std::move(v)); };
    add("index", Value(i + 1));
    add("index0", Value(i));
    add("revindex", Value(n - i));
    add("revindex0", Value(n - i - 1));
    add("first", Value(i == 0));
    add("last", Value(i == n - 1));
    add("length", Value(n));
    add("depth", Value(1));
    add("depth0", Value(0));
    if (i > 0) add("previtem", items[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) add("nextitem", items[static_cast<size_t>(i + 1)]);
    add("cycle", Value::function("cycle", [i](Evaluator&, const CallArgs& a) -> Value {
          if (a.positional.empty()) type_error("no items for cycling given");
          return a.positional[static_cast<size_t>(i) % a.positional.size()];
        }));
    local.set("loop", Value(std::move(loop)));
    assign(s.target, items[static_cast<size_t>(i)], local);
    Flow f = exec_body(s.body, local);
    if (f == Flow::kBreak) break;
  }
}

Value Evaluator::lookup(std::string_view name, Scope& scope) {
  if (Value* v = scope.find(name)) return *v;
  if (context_.is_dict())
    if (const Value* v = context_.as_dict()->find(name)) return *v;
  if (const Value* g = find_global(name)) return *g;
  return Value::undefined("'" + std::string(name) + "' is undefined");
}

CallArgs Evaluator::eval_args(const Expr& e, Scope& scope, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.children.size(); ++i)
    args.positional.push_back(eval(*e.children[i], scope));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
  return args;
}

Value Evaluator::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) fail(ErrorKind::kUndefined, callee.undefined_name());
  if (!callee.is_callable()) type_error("'" + callee.type_name() + "' object is not callable");
  if (++depth_ > env_.limits.max_call_depth) {
    --depth_;
    fail(ErrorKind::kLimit, "maximum call depth exceeded");
  }
  try {
    Value r = callee.as_func()->fn(*this, args);
    --depth_;
    return r;
  } catch (...) {
    --depth_;
    throw;
  }
}

Value Evaluator::make_macro(const Stmt& s) {
  const Stmt* stmt = &s;
  return Value::function(
      s.text,
      [stmt](Evaluator& ev, const CallArgs& args) -> Value {
        const Value* caller = nullptr;
        CallArgs rest;
        rest.positional = args.positional;
        for (const auto& kv : args.keyword) {
          if (kv.first == "caller")
            caller = &kv.second;
          else
            rest.keyword.push_back(kv);
        }
        return ev.invoke_macro(*stmt, rest, caller);
      },
      true);
}

Value Evaluator::invoke_macro(const Stmt& s, const CallArgs& args, const Value* caller) {
  Scope local;
  local.parent = &root_;
  const size_t np = s.params.size();
  std::vector<Value> varargs;
  for (size_t i = np; i < args.positional.size(); ++i) varargs.push_back(args.positional[i]);
  auto kwargs = std::make_shared<DictData>();
  ContainerArena::track(kwargs);
  for (const auto& [k, v] : args.keyword) {
    bool is_param = false;
    for (size_t i = 0; i < np; ++i) {
      if (s.params[i] == k) {
        if (i < args.positional.size())
          type_error("macro '" + s.text + "' got multiple values for argument '" + k + "'");
        is_param = true;
      }
    }
    if (!is_param) kwargs->items.emplace_back(Value(k), v);
  }
  if (!varargs.empty())
    type_error("macro '" + s.text + "' takes not more than " + std::to_string(np) + " argument(s)");
  if (!kwargs->items.empty())
    type_error("macro '" + s.text + "' takes no keyword argument '" +
               kwargs->items[0].first.as_string() + "'");
  for (size_t i = 0; i < np; ++i) {
    const Value* v = args.get(i, s.params[i]);
    if (v)
      local.set(s.params[i], *v);
    else if (s.defaults[i])
      local.set(s.params[i], eval(*s.defaults[i], local));
    else
      local.set(s.params[i], Value::undefined("'" + s.params[i] + "' is undefined"));
  }
  if (caller) local.set("caller", *caller);
  SourcePos saved = cur_pos_;
  std::string text = capture(s.body, local);
  cur_pos_ = saved;
  return Value(std::move(text));
}

}  // namespace geniex::jinja
