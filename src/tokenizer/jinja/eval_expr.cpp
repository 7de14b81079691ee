// Expression evaluation: operators with Python semantics, attribute and item access, slicing.
#include <cmath>
#include <cstdio>
#include <limits>

#include "tokenizer/jinja/budget.h"
#include "tokenizer/jinja/evaluator.h"
#include "tokenizer/jinja/pyformat.h"

namespace geniex::jinja {
namespace {

[[noreturn]] void undefined_error(const Value& v) {
  fail(ErrorKind::kUndefined,
       v.undefined_name().empty() ? "value is undefined" : v.undefined_name());
}

[[noreturn]] void operand_error(const std::string& op, const Value& a, const Value& b) {
  type_error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
             b.type_name() + "'");
}

[[noreturn]] void overflow() {
  fail(ErrorKind::kUnsupported,
       "integer overflow (arbitrary precision integers are not supported)");
}

int64_t add_i(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t sub_i(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
int64_t mul_i(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

int64_t py_floordiv(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> list;
  if (args.is_list() && args.as_list()->is_tuple)
    list = args.as_list()->items;
  else
    list.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    check_string_size(out.size());
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) type_error("incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    std::string spec = "%";
    while (i < fmt.size() &&
           std::string_view("-+ #0123456789.").find(fmt[i]) != std::string_view::npos)
      spec += fmt[i++];
    if (i >= fmt.size()) type_error("incomplete format");
    char conv = fmt[i];
    if (next >= list.size()) type_error("not enough arguments for format string");
    const Value& a = list[next++];
    char buf[512];
    if (conv == 's' || conv == 'r') {
      if (spec.size() > 1) fail(ErrorKind::kUnsupported, "width/precision for %s is not supported");
      std::string piece = conv == 's' ? a.str() : a.repr();
      check_string_size(out.size() + piece.size());
      out += piece;
    } else if (conv == 'd' || conv == 'i') {
      if (!a.is_number()) type_error("%d format: a real number is required, not " + a.type_name());
      long long v =
          a.is_float() ? static_cast<long long>(a.as_float()) : static_cast<long long>(a.to_int());
      std::snprintf(buf, sizeof(buf), (spec + "lld").c_str(), v);
      out += buf;
    } else if (conv == 'f' || conv == 'e' || conv == 'g') {
      if (!a.is_number()) type_error("must be real number, not " + a.type_name());
      std::snprintf(buf, sizeof(buf), (spec + conv).c_str(), a.to_double());
      out += buf;
    } else {
      fail(ErrorKind::kUnsupported,
           std::string("format conversion %") + conv + " is not supported");
    }
  }
  if (next < list.size()) type_error("not all arguments converted during string formatting");
  check_string_size(out.size());
  charge_bytes(out.size());
  return out;
}

namespace {

// Python slice index normalization (PySlice_AdjustIndices).
std::vector<size_t> slice_indices(int64_t len, const Value& start, const Value& stop,
                                  const Value& step) {
  auto as_idx = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.to_int();
    type_error("slice indices must be integers or None");
  };
  int64_t st = as_idx(step).value_or(1);
  if (st == 0) type_error("slice step cannot be zero");
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= len) {
      x = st < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t b = norm(as_idx(start), st < 0 ? len - 1 : 0);
  int64_t e = norm(as_idx(stop), st < 0 ? -1 : len);
  std::vector<size_t> out;
  if (st > 0)
    for (int64_t i = b; i < e; i += st) out.push_back(static_cast<size_t>(i));
  else
    for (int64_t i = b; i > e; i += st) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

Value Evaluator::getattr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    const auto& d = *obj.as_dict();
    if (!d.is_namespace) {
      Value m = get_method(obj, name);
      if (!m.is_undefined()) return m;
    }
    if (const Value* v = d.find(name)) return *v;
    return Value::undefined("'" + std::string(d.is_namespace ? "Namespace" : "dict object") +
                            "' has no attribute '" + std::string(name) + "'");
  }
  if (obj.is_string() || obj.is_list()) {
    Value m = get_method(obj, name);
    if (!m.is_undefined()) return m;
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" +
                          std::string(name) + "'");
}

Value Evaluator::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict()->find(key)) return *v;
    if (key.is_string()) return getattr(obj, key.as_string());
    return Value::undefined("'dict object' has no attribute " + key.repr());
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.to_int();
    if (obj.is_list()) {
      const auto& items = obj.as_list()->items;
      auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        return Value::undefined(obj.type_name() + " object has no element " +
                                std::to_string(key.to_int()));
      return items[static_cast<size_t>(i)];
    }
    std::optional<std::string> c = utf8_at(obj.as_string(), i);
    if (!c) return Value::undefined("str object has no element " + std::to_string(key.to_int()));
    return Value(std::move(*c));
  }
  if (key.is_string()) return getattr(obj, key.as_string());
  return Value::undefined("'" + obj.type_name() + " object' has no attribute " + key.repr());
}

bool value_less(const Value& a, const Value& b) {
  NestGuard nest;
  charge_steps(1);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
    return a.to_int() < b.to_int();
  }
  if (a.is_string() && b.is_string()) {
    charge_bytes(std::min(a.as_string().size(), b.as_string().size()));
    return a.as_string() < b.as_string();
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list()->items;
    const auto& y = b.as_list()->items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return value_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  type_error("'<' not supported between instances of '" + a.type_name() + "' and '" +
             b.type_name() + "'");
}

bool Evaluator::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in" || op == "notin") {
    bool r = false;
    if (b.is_string()) {
      if (!a.is_string())
        type_error("'in <string>' requires string as left operand, not " + a.type_name());
      charge_bytes(b.as_string().size());
      r = b.as_string().find(a.as_string()) != std::string::npos;
    } else if (b.is_list()) {
      for (const auto& x : b.as_list()->items)
        if (values_equal(x, a)) {
          r = true;
          break;
        }
    } else if (b.is_dict()) {
      r = b.as_dict()->find(a) != nullptr;
    } else if (!b.is_undefined()) {
      type_error("argument of type '" + b.type_name() + "' is not iterable");
    }
    return op == "in" ? r : !r;
  }
  if (op == "<") return value_less(a, b);
  if (op == ">") return value_less(b, a);
  if (op == "<=") return value_less(a, b) || (values_equal(a, b) && !a.is_undefined());
  if (op == ">=") return value_less(b, a) || (values_equal(a, b) && !a.is_undefined());
  type_error("unknown comparison " + op);
}

Value Evaluator::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) return Value(add_i(a.to_int(), b.to_int()));
    if (nums) return Value(a.to_double() + b.to_double());
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.as_list()->is_tuple == b.as_list()->is_tuple) {
      std::vector<Value> items = a.as_list()->items;
      if (items.size() + b.as_list()->items.size() > env_.limits.max_collection)
        fail(ErrorKind::kLimit, "list too long");
      charge_elements(items.size() + b.as_list()->items.size(), sizeof(Value));
      items.insert(items.end(), b.as_list()->items.begin(), b.as_list()->items.end());
      return Value::list(std::move(items), a.as_list()->is_tuple);
    }
    operand_error(op, a, b);
  }
  if (op == "-") {
    if (ints) return Value(sub_i(a.to_int(), b.to_int()));
    if (nums) return Value(a.to_double() - b.to_double());
    operand_error(op, a, b);
  }
  if (op == "*") {
    if (ints) return Value(mul_i(a.to_int(), b.to_int()));
    if (nums) return Value(a.to_double() * b.to_double());
    const Value* seq = (a.is_string() || a.is_list())   ? &a
                       : (b.is_string() || b.is_list()) ? &b
                                                        : nullptr;
    const Value* cnt = seq == &a ? &b : &a;
    if (seq && (cnt->is_int() || cnt->is_bool())) {
      int64_t n = std::max<int64_t>(0, cnt->to_int());
      if (seq->is_string()) {
        const std::string& s = seq->as_string();
        if (!s.empty() && static_cast<uint64_t>(n) > env_.limits.max_output_bytes / s.size())
          check_size(SIZE_MAX);
        check_size(s.size() * static_cast<size_t>(n));
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value(std::move(out));
      }
      const auto& items = seq->as_list()->items;
      if (!items.empty() && static_cast<uint64_t>(n) > env_.limits.max_collection / items.size())
        fail(ErrorKind::kLimit, "list too long");
      charge_elements(items.size() * static_cast<uint64_t>(n), sizeof(Value));
      std::vector<Value> out;
      for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
      return Value::list(std::move(out), seq->as_list()->is_tuple);
    }
    operand_error(op, a, b);
  }
  if (op == "/") {
    if (!nums) operand_error(op, a, b);
    if (b.to_double() == 0) fail(ErrorKind::kType, "division by zero");
    return Value(a.to_double() / b.to_double());
  }
  if (op == "//") {
    if (!nums) operand_error(op, a, b);
    if (b.to_double() == 0) fail(ErrorKind::kType, "integer division or modulo by zero");
    if (ints) return Value(py_floordiv(a.to_int(), b.to_int()));
    return Value(std::floor(a.to_double() / b.to_double()));
  }
  if (op == "%") {
    if (a.is_string()) return Value(percent_format(a.as_string(), b));
    if (!nums) operand_error(op, a, b);
    if (b.to_double() == 0) fail(ErrorKind::kType, "integer division or modulo by zero");
    if (ints) return Value(py_mod(a.to_int(), b.to_int()));
    return Value(py_fmod(a.to_double(), b.to_double()));
  }
  if (op == "**") {
    if (!nums) operand_error("** or pow()", a, b);
    if (ints && b.to_int() >= 0) {
      int64_t base = a.to_int(), e = b.to_int(), acc = 1;
      while (e > 0) {
        if (e & 1) acc = mul_i(acc, base);
        e >>= 1;
        if (e > 0) base = mul_i(base, base);
      }
      return Value(acc);
    }
    if (a.to_double() == 0 && b.to_double() < 0)
      fail(ErrorKind::kType, "0.0 cannot be raised to a negative power");
    return Value(std::pow(a.to_double(), b.to_double()));
  }
  type_error("unknown operator " + op);
}

Value Evaluator::eval(const Expr& e, Scope& scope) {
  NestGuard nest;
  charge_steps(1);
  try {
    switch (e.kind) {
      case ExprKind::kLiteral: return e.literal;
      case ExprKind::kName: return lookup(e.name, scope);
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const auto& c : e.children) items.push_back(eval(*c, scope));
        return Value::list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        Value d = Value::dict();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2)
          d.as_dict()->set(eval(*e.children[i], scope), eval(*e.children[i + 1], scope));
        return d;
      }
      case ExprKind::kAttr: return getattr(eval(*e.children[0], scope), e.name);
      case ExprKind::kSubscript: {
        Value obj = eval(*e.children[0], scope);
        const Expr& idx = *e.children[1];
        if (idx.kind != ExprKind::kSlice) return getitem(obj, eval(idx, scope));
        Value parts[3];
        for (size_t i = 0; i < 3; ++i)
          parts[i] = idx.children[i] ? eval(*idx.children[i], scope) : Value::none();
        if (obj.is_undefined()) undefined_error(obj);
        if (obj.is_list()) {
          const auto& items = obj.as_list()->items;
          charge_elements(items.size(), sizeof(Value) + sizeof(size_t));
          std::vector<Value> out;
          for (size_t k :
               slice_indices(static_cast<int64_t>(items.size()), parts[0], parts[1], parts[2]))
            out.push_back(items[k]);
          return Value::list(std::move(out), obj.as_list()->is_tuple);
        }
        if (obj.is_string()) {
          charge_bytes(uint64_t{16} * obj.as_string().size());
          std::u32string u = utf8_decode(obj.as_string());
          std::string out;
          for (size_t k :
               slice_indices(static_cast<int64_t>(u.size()), parts[0], parts[1], parts[2]))
            utf8_append(out, u[k]);
          return Value(std::move(out));
        }
        return Value::undefined("'" + obj.type_name() + "' object is not subscriptable");
      }
      case ExprKind::kSlice: type_error("slice outside of a subscript");
      case ExprKind::kCall: {
        Value callee = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, scope, 1);
        return call(callee, args);
      }
      case ExprKind::kFilter: {
        Value subject = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, scope, 1);
        FilterFn f = find_filter(e.name);
        if (!f) fail(ErrorKind::kSyntax, "No filter named '" + e.name + "'.");
        return f(*this, subject, args);
      }
      case ExprKind::kTest: {
        Value subject = eval(*e.children[0], scope);
        CallArgs args = eval_args(e, scope, 1);
        TestFn t = find_test(e.name);
        if (!t) fail(ErrorKind::kSyntax, "No test named '" + e.name + "'.");
        return Value(t(*this, subject, args));
      }
      case ExprKind::kUnary: {
        Value v = eval(*e.children[0], scope);
        if (v.is_undefined()) undefined_error(v);
        if (!v.is_number())
          type_error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_bool() ? Value(v.to_int()) : v;
        if (v.is_float()) return Value(-v.as_float());
        return Value(sub_i(0, v.to_int()));
      }
      case ExprKind::kBinary:
        return eval_binary(e.name, eval(*e.children[0], scope), eval(*e.children[1], scope));
      case ExprKind::kCompare: {
        Value left = eval(*e.children[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], scope);
          if (!compare(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kAnd: {
        Value l = eval(*e.children[0], scope);
        return l.truthy() ? eval(*e.children[1], scope) : l;
      }
      case ExprKind::kOr: {
        Value l = eval(*e.children[0], scope);
        return l.truthy() ? l : eval(*e.children[1], scope);
      }
      case ExprKind::kNot: return Value(!eval(*e.children[0], scope).truthy());
      case ExprKind::kCond:
        if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
        return e.children[2] ? eval(*e.children[2], scope)
                             : Value::undefined(
                                   "the inline if-expression evaluated to false and no else "
                                   "section was defined.");
      case ExprKind::kConcat: {
        std::string out;
        for (const auto& c : e.children) {
          out += eval(*c, scope).str();
          if (out.size() > env_.limits.max_output_bytes) check_size(out.size());
        }
        check_size(out.size());
        return Value(std::move(out));
      }
    }
    type_error("bad expression");
  } catch (JinjaError& err) {
    err.set_pos_if_unknown(e.pos);
    throw;
  }
}

}  // namespace geniex::jinja
