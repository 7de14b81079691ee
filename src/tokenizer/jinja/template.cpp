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

void check_names(const Expr& e) {
  if (e.kind == ExprKind::kFilter && !find_filter(e.name))
    fail(ErrorKind::kSyntax, "No filter named '" + e.name + "'.", e.pos);
  if (e.kind == ExprKind::kTest && !find_test(e.name))
    fail(ErrorKind::kSyntax, "No test named '" + e.name + "'.", e.pos);
  for (const auto& c : e.children)
    if (c) check_names(*c);
  for (const auto& kv : e.kwargs) check_names(*kv.second);
}

void check_names(const Body& body) {
  for (const auto& s : body) {
    for (const Expr* e : {s->expr.get(), s->cond.get()})
      if (e) check_names(*e);
    for (const auto& d : s->defaults)
      if (d) check_names(*d);
    for (const auto& [c, b] : s->branches) {
      check_names(*c);
      check_names(b);
    }
    check_names(s->body);
    check_names(s->else_body);
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
    check_names(impl->body);
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
