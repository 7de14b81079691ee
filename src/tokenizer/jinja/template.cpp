// Template: the module boundary. Every internal exception is caught here.
#include "tokenizer/jinja/template.h"

#include <new>

#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/parser.h"

namespace geniex::jinja {

struct Template::Impl {
  Body body;
};

namespace {

// Deepest expression tree a template may hold. jinja2 itself (CPython's default recursion limit)
// fails between 400 and 500 chained operators, so every template jinja2 renders stays inside.
constexpr int kMaxExprDepth = 500;

// Checks one expression tree without recursion: its depth, and that every filter and test it
// names exists.
void check_expr(const Expr& root) {
  std::vector<std::pair<const Expr*, int>> pending{{&root, 1}};
  while (!pending.empty()) {
    auto [e, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxExprDepth) {
      fail(ErrorKind::kLimit,
           "expression nested deeper than " + std::to_string(kMaxExprDepth) + " levels", e->pos);
    }
    if (e->kind == ExprKind::kFilter && !find_filter(e->name))
      fail(ErrorKind::kSyntax, "No filter named '" + e->name + "'.", e->pos);
    if (e->kind == ExprKind::kTest && !find_test(e->name))
      fail(ErrorKind::kSyntax, "No test named '" + e->name + "'.", e->pos);
    for (const auto& c : e->children)
      if (c) pending.emplace_back(c.get(), depth + 1);
    for (const auto& kv : e->kwargs)
      if (kv.second) pending.emplace_back(kv.second.get(), depth + 1);
  }
}

// Statements nest at most as deep as the parser allows (its own limit), so this recursion is
// bounded.
void check_tree(const Body& body) {
  for (const auto& s : body) {
    for (const Expr* e : {s->expr.get(), s->cond.get()})
      if (e) check_expr(*e);
    for (const auto& d : s->defaults)
      if (d) check_expr(*d);
    for (const auto& [c, b] : s->branches) {
      check_expr(*c);
      check_tree(b);
    }
    check_tree(s->body);
    check_tree(s->else_body);
  }
}

std::string where(SourcePos p) {
  if (p.line == 0) return "";
  return " at " + std::to_string(p.line) + ":" + std::to_string(p.col);
}

}  // namespace

Status status_from_error(const JinjaError& e) {
  switch (e.kind()) {
    case ErrorKind::kSyntax:
      return invalid_argument("jinja syntax error" + where(e.pos()) + ": " + e.message());
    case ErrorKind::kUndefined:
      return invalid_argument("jinja undefined error" + where(e.pos()) + ": " + e.message());
    case ErrorKind::kType:
      return invalid_argument("jinja type error" + where(e.pos()) + ": " + e.message());
    case ErrorKind::kRaised:
      return invalid_argument("raise_exception" + where(e.pos()) + ": " + e.message());
    case ErrorKind::kLimit:
      return resource_exhausted("jinja limit" + where(e.pos()) + ": " + e.message());
    case ErrorKind::kUnsupported:
      return unimplemented("jinja unsupported" + where(e.pos()) + ": " + e.message());
  }
  return internal_error("jinja: unknown error");
}

Result<Template> Template::parse(std::string_view source, const ParseOptions& opts) {
  try {
    LexOptions lo{opts.trim_blocks, opts.lstrip_blocks, opts.keep_trailing_newline};
    std::string src = normalize_source(source, lo);
    LineMap lines(src);
    std::vector<Token> toks = tokenize(src, lo, lines);
    auto impl = std::make_shared<Impl>();
    impl->body = parse_template(toks, lines);
    check_tree(impl->body);
    return Template(std::move(impl));
  } catch (const JinjaError& e) {
    return status_from_error(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("jinja: out of memory while parsing");
  } catch (const std::exception& e) {
    return internal_error(std::string("jinja: ") + e.what());
  }
}

Result<std::string> Template::render(const Value& context, const RenderEnv& env) const {
  try {
    // Declared first: destroyed last, after the evaluator's scopes let go of their values.
    ContainerArena arena;
    Evaluator ev(env, context);
    return ev.render(impl_->body);
  } catch (const JinjaError& e) {
    return status_from_error(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("jinja: out of memory while rendering");
  } catch (const std::exception& e) {
    return internal_error(std::string("jinja: ") + e.what());
  }
}

}  // namespace geniex::jinja
