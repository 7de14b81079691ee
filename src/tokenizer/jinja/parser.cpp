// Recursive-descent parser with jinja2's precedence:
// condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < postfix/filters.
#include "tokenizer/jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

namespace geniex::jinja {
namespace {

constexpr int kMaxNesting = 200;

std::string describe(const Token& t) {
  switch (t.type) {
    case TokType::kText: return "template data";
    case TokType::kVarBegin: return "begin of print statement";
    case TokType::kVarEnd: return "end of print statement";
    case TokType::kBlockBegin: return "begin of statement block";
    case TokType::kBlockEnd: return "end of statement block";
    case TokType::kEof: return "end of template";
    case TokType::kString: return "string";
    case TokType::kInt: return "integer";
    case TokType::kFloat: return "float";
    default: return "'" + t.value + "'";
  }
}

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const LineMap& lines) : t_(toks), lines_(lines) {}

  Body parse_all() {
    std::string found;
    Body body = subparse({}, found);
    return body;
  }

 private:
  // ---- token helpers -------------------------------------------------------
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  SourcePos pos() const { return lines_.pos(cur().offset); }
  bool is_op(std::string_view op) const { return cur().type == TokType::kOp && cur().value == op; }
  bool is_name(std::string_view n) const {
    return cur().type == TokType::kName && cur().value == n;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(const std::string& msg) const { fail(ErrorKind::kSyntax, msg, pos()); }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error("expected token '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != TokType::kName) error("expected token 'name', got " + describe(cur()));
    std::string n = cur().value;
    next();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokType::kBlockEnd)
      error("expected token 'end of statement block', got " + describe(cur()));
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.error("template nesting too deep");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr make(ExprKind k, SourcePos p) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->pos = p;
    return e;
  }
  StmtPtr make_stmt(StmtKind k, SourcePos p) {
    auto s = std::make_unique<Stmt>();
    s->kind = k;
    s->pos = p;
    return s;
  }

  // ---- statements ----------------------------------------------------------
  // Parses until a block tag whose first name is in `ends`; leaves that name current.
  Body subparse(std::initializer_list<std::string_view> ends, std::string& found) {
    DepthGuard g(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokType::kText) {
        auto s = make_stmt(StmtKind::kText, pos());
        s->text = t.value;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokType::kVarBegin) {
        SourcePos p = pos();
        next();
        auto s = make_stmt(StmtKind::kOutput, p);
        s->expr = parse_tuple(true, {});
        if (cur().type != TokType::kVarEnd)
          error("expected token 'end of print statement', got " + describe(cur()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == TokType::kBlockBegin) {
        next();
        if (cur().type != TokType::kName) error("tag name expected");
        for (auto e : ends) {
          if (cur().value == e) {
            found = cur().value;
            return body;
          }
        }
        const std::string& tag = cur().value;
        if (ends.size() != 0 && (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else")) {
          std::string want;
          for (auto e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          error("Encountered unknown tag '" + tag +
                "'. Jinja was looking for the following tags: " + want + ".");
        }
        body.push_back(parse_statement());
      } else if (t.type == TokType::kEof) {
        if (ends.size() != 0) {
          std::string want;
          for (auto e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          error("Unexpected end of template. Jinja was looking for the following tags: " + want +
                ".");
        }
        return body;
      } else {
        error("unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    SourcePos p = pos();
    std::string tag = cur().value;
    if (tag == "if") return parse_if(p);
    if (tag == "for") return parse_for(p);
    if (tag == "set") return parse_set(p);
    if (tag == "macro") return parse_macro(p);
    if (tag == "call") return parse_call_block(p);
    if (tag == "filter") return parse_filter_block(p);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) error("'" + tag + "' outside of a loop");
      next();
      expect_block_end();
      return make_stmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, p);
    }
    if (tag == "generation") {
      next();
      expect_block_end();
      auto s = make_stmt(StmtKind::kScope, p);
      std::string found;
      s->body = subparse({"endgeneration"}, found);
      next();
      expect_block_end();
      return s;
    }
    static const char* kUnsupported[] = {"extends", "block",      "include", "import", "from",
                                         "with",    "autoescape", "do",      "trans"};
    for (const char* u : kUnsupported)
      if (tag == u) fail(ErrorKind::kUnsupported, "tag '" + tag + "' is not supported", p);
    error("Encountered unknown tag '" + tag + "'.");
  }

  StmtPtr parse_if(SourcePos p) {
    auto s = make_stmt(StmtKind::kIf, p);
    next();  // if / elif
    while (true) {
      ExprPtr cond = parse_tuple(false, {});
      expect_block_end();
      std::string found;
      Body body = subparse({"elif", "else", "endif"}, found);
      s->branches.emplace_back(std::move(cond), std::move(body));
      next();
      if (found == "elif") continue;
      if (found == "else") {
        expect_block_end();
        s->else_body = subparse({"endif"}, found);
        next();
      }
      break;
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_for(SourcePos p) {
    auto s = make_stmt(StmtKind::kFor, p);
    next();
    s->target = parse_target(false);
    if (!skip_name("in")) error("expected token 'in', got " + describe(cur()));
    s->expr = parse_tuple(false, {"recursive"});
    if (skip_name("if")) s->cond = parse_expression(true);
    if (skip_name("recursive")) s->recursive = true;
    expect_block_end();
    ++loop_depth_;
    std::string found;
    s->body = subparse({"endfor", "else"}, found);
    --loop_depth_;
    next();
    if (found == "else") {
      expect_block_end();
      s->else_body = subparse({"endfor"}, found);
      next();
    }
    expect_block_end();
    if (s->recursive) fail(ErrorKind::kUnsupported, "recursive for loops are not supported", p);
    return s;
  }

  Target parse_target(bool with_namespace) {
    Target t;
    bool paren = skip_op("(");
    if (with_namespace && !paren && cur().type == TokType::kName && peek().type == TokType::kOp &&
        peek().value == ".") {
      t.names.push_back(expect_name());
      next();
      t.attr = expect_name();
      return t;
    }
    while (true) {
      t.names.push_back(expect_name());
      if (!skip_op(",")) break;
      t.is_tuple = true;
      if (cur().type != TokType::kName) break;  // trailing comma
    }
    if (paren) {
      expect_op(")");
      if (t.names.size() > 1) t.is_tuple = true;
    }
    for (const auto& n : t.names)
      if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None")
        error("Can't assign to constant '" + n + "'");
    return t;
  }

  StmtPtr parse_set(SourcePos p) {
    next();
    Target target = parse_target(true);
    if (skip_op("=")) {
      auto s = make_stmt(StmtKind::kSet, p);
      s->target = std::move(target);
      s->expr = parse_tuple(true, {});
      expect_block_end();
      return s;
    }
    if (!target.attr.empty() || target.is_tuple)
      error("expected token '=', got " + describe(cur()));
    auto s = make_stmt(StmtKind::kSetBlock, p);
    s->target = std::move(target);
    if (is_op("|")) s->expr = parse_filter(nullptr, false);
    expect_block_end();
    std::string found;
    s->body = subparse({"endset"}, found);
    next();
    expect_block_end();
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      if (is_op(")")) break;
      s.params.push_back(expect_name());
      s.defaults.push_back(skip_op("=") ? parse_expression(true) : nullptr);
    }
    next();
  }

  StmtPtr parse_macro(SourcePos p) {
    auto s = make_stmt(StmtKind::kMacro, p);
    next();
    s->text = expect_name();
    parse_signature(*s);
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    std::string found;
    s->body = subparse({"endmacro"}, found);
    loop_depth_ = saved;
    next();
    if (cur().type == TokType::kName) next();  // {% endmacro name %}
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block(SourcePos p) {
    auto s = make_stmt(StmtKind::kCallBlock, p);
    next();
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::kCall) error("expected call");
    expect_block_end();
    std::string found;
    s->body = subparse({"endcall"}, found);
    next();
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block(SourcePos p) {
    auto s = make_stmt(StmtKind::kFilterBlock, p);
    next();
    s->expr = parse_filter(nullptr, true);
    expect_block_end();
    std::string found;
    s->body = subparse({"endfilter"}, found);
    next();
    expect_block_end();
    return s;
  }

  // ---- expressions ---------------------------------------------------------
  bool tuple_end(std::initializer_list<std::string_view> extra) const {
    const Token& t = cur();
    if (t.type == TokType::kVarEnd || t.type == TokType::kBlockEnd || t.type == TokType::kEof)
      return true;
    if (t.type == TokType::kOp && t.value == ")") return true;
    if (t.type == TokType::kName)
      for (auto e : extra)
        if (t.value == e) return true;
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra,
                      bool explicit_parens = false) {
    SourcePos p = pos();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) error("Expected an expression, got " + describe(cur()));
    }
    auto e = make(ExprKind::kTuple, p);
    e->children = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard g(*this);
    if (!with_condexpr) return parse_or();
    SourcePos p = pos();
    ExprPtr e1 = parse_or();
    while (skip_name("if")) {
      ExprPtr e2 = parse_or();
      ExprPtr e3 = skip_name("else") ? parse_expression(true) : nullptr;
      auto c = make(ExprKind::kCond, p);
      c->children.push_back(std::move(e2));
      c->children.push_back(std::move(e1));
      c->children.push_back(std::move(e3));
      e1 = std::move(c);
    }
    return e1;
  }

  ExprPtr binary(ExprKind k, ExprPtr l, ExprPtr r, SourcePos p, std::string op = {}) {
    auto e = make(k, p);
    e->name = std::move(op);
    e->children.push_back(std::move(l));
    e->children.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_or() {
    SourcePos p = pos();
    ExprPtr l = parse_and();
    while (skip_name("or")) l = binary(ExprKind::kOr, std::move(l), parse_and(), p);
    return l;
  }
  ExprPtr parse_and() {
    SourcePos p = pos();
    ExprPtr l = parse_not();
    while (skip_name("and")) l = binary(ExprKind::kAnd, std::move(l), parse_not(), p);
    return l;
  }
  ExprPtr parse_not() {
    SourcePos p = pos();
    if (skip_name("not")) {
      DepthGuard g(*this);
      auto e = make(ExprKind::kNot, p);
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    SourcePos p = pos();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == TokType::kOp &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
           cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        op = cur().value;
        next();
      } else if (skip_name("in")) {
        op = "in";
      } else if (is_name("not") && peek().type == TokType::kName && peek().value == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::kCompare, p);
        cmp->children.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->children.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }
  ExprPtr parse_math1() {
    SourcePos p = pos();
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = cur().value;
      next();
      l = binary(ExprKind::kBinary, std::move(l), parse_concat(), p, op);
    }
    return l;
  }
  ExprPtr parse_concat() {
    SourcePos p = pos();
    ExprPtr l = parse_math2();
    if (!is_op("~")) return l;
    auto e = make(ExprKind::kConcat, p);
    e->children.push_back(std::move(l));
    while (skip_op("~")) e->children.push_back(parse_math2());
    return e;
  }
  ExprPtr parse_math2() {
    SourcePos p = pos();
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().value;
      next();
      l = binary(ExprKind::kBinary, std::move(l), parse_pow(), p, op);
    }
    return l;
  }
  ExprPtr parse_pow() {
    SourcePos p = pos();
    ExprPtr l = parse_unary(true);
    while (skip_op("**")) l = binary(ExprKind::kBinary, std::move(l), parse_unary(true), p, "**");
    return l;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard g(*this);
    SourcePos p = pos();
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      std::string op = cur().value;
      next();
      node = make(ExprKind::kUnary, p);
      node->name = op;
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr literal(Value v, SourcePos p) {
    auto e = make(ExprKind::kLiteral, p);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    SourcePos p = pos();
    const Token& t = cur();
    if (t.type == TokType::kName) {
      std::string n = t.value;
      next();
      if (n == "true" || n == "True") return literal(Value(true), p);
      if (n == "false" || n == "False") return literal(Value(false), p);
      if (n == "none" || n == "None") return literal(Value::none(), p);
      auto e = make(ExprKind::kName, p);
      e->name = n;
      return e;
    }
    if (t.type == TokType::kString) {
      std::string s;
      while (cur().type == TokType::kString) {
        s += cur().value;
        next();
      }
      return literal(Value(std::move(s)), p);
    }
    if (t.type == TokType::kInt) {
      int64_t v = 0;
      auto r = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
      if (r.ec != std::errc()) error("integer literal out of range");
      next();
      return literal(Value(v), p);
    }
    if (t.type == TokType::kFloat) {
      double v = std::strtod(t.value.c_str(), nullptr);
      next();
      return literal(Value(v), p);
    }
    if (skip_op("(")) {
      ExprPtr e = parse_tuple(true, {}, true);
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto e = make(ExprKind::kList, p);
      while (!is_op("]")) {
        if (!e->children.empty()) expect_op(",");
        if (is_op("]")) break;
        e->children.push_back(parse_expression(true));
      }
      next();
      return e;
    }
    if (skip_op("{")) {
      auto e = make(ExprKind::kDict, p);
      while (!is_op("}")) {
        if (!e->children.empty()) expect_op(",");
        if (is_op("}")) break;
        e->children.push_back(parse_expression(true));
        expect_op(":");
        e->children.push_back(parse_expression(true));
      }
      next();
      return e;
    }
    error("unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      SourcePos p = pos();
      if (skip_op(".")) {
        if (cur().type == TokType::kName) {
          auto e = make(ExprKind::kAttr, p);
          e->name = cur().value;
          next();
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().type == TokType::kInt) {
          ExprPtr idx = parse_primary();
          node = binary(ExprKind::kSubscript, std::move(node), std::move(idx), p);
        } else {
          error("expected name or number");
        }
      } else if (skip_op("[")) {
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
          if (!args.empty()) expect_op(",");
          if (is_op("]")) break;
          args.push_back(parse_subscribed());
        }
        next();
        if (args.empty()) error("expected subscript expression");
        ExprPtr idx;
        if (args.size() == 1) {
          idx = std::move(args[0]);
        } else {
          idx = make(ExprKind::kTuple, p);
          idx->children = std::move(args);
        }
        node = binary(ExprKind::kSubscript, std::move(node), std::move(idx), p);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscribed() {
    SourcePos p = pos();
    std::vector<ExprPtr> args;
    if (skip_op(":")) {
      args.push_back(nullptr);
    } else {
      ExprPtr n = parse_expression(true);
      if (!skip_op(":")) return n;
      args.push_back(std::move(n));
    }
    if (is_op(":"))
      args.push_back(nullptr);
    else if (!is_op("]") && !is_op(","))
      args.push_back(parse_expression(true));
    else
      args.push_back(nullptr);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(","))
        args.push_back(parse_expression(true));
      else
        args.push_back(nullptr);
    } else {
      args.push_back(nullptr);
    }
    auto e = make(ExprKind::kSlice, p);
    e->children = std::move(args);
    return e;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool any = false;
    while (!is_op(")")) {
      if (any) expect_op(",");
      if (is_op(")")) break;
      any = true;
      if (is_op("*") || is_op("**"))
        fail(ErrorKind::kUnsupported, "*args / **kwargs in calls are not supported", pos());
      if (cur().type == TokType::kName && peek().type == TokType::kOp && peek().value == "=") {
        std::string k = cur().value;
        next();
        next();
        e.kwargs.emplace_back(k, parse_expression(true));
      } else {
        if (!e.kwargs.empty()) error("positional argument follows keyword argument");
        e.children.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, pos());
    e->children.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      auto e = make(ExprKind::kFilter, pos());
      e->name = expect_name();
      while (skip_op(".")) e->name += "." + expect_name();
      e->children.push_back(std::move(node));
      if (is_op("(")) parse_call_args(*e);
      node = std::move(e);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    SourcePos p = pos();
    next();  // 'is'
    bool negated = skip_name("not");
    auto e = make(ExprKind::kTest, p);
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    e->children.push_back(std::move(node));
    const Token& t = cur();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t.type == TokType::kName || t.type == TokType::kString || t.type == TokType::kInt ||
                t.type == TokType::kFloat || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) error("You cannot chain multiple tests with is");
      e->children.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return e;
    auto n = make(ExprKind::kNot, p);
    n->children.push_back(std::move(e));
    return n;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|"))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  const std::vector<Token>& t_;
  const LineMap& lines_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const LineMap& lines) {
  return Parser(tokens, lines).parse_all();
}

}  // namespace geniex::jinja
