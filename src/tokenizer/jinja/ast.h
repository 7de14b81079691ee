// Abstract syntax tree of a parsed template. Immutable after parsing, so one tree may be
// rendered from many threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/value.h"

namespace geniex::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  kLiteral,    ///< literal
  kName,       ///< name
  kList,       ///< children: items
  kTuple,      ///< children: items
  kDict,       ///< children: k0, v0, k1, v1, ...
  kAttr,       ///< children[0].name
  kSubscript,  ///< children[0][children[1]]
  kSlice,      ///< children: start, stop, step (each may be null)
  kCall,       ///< children[0](children[1..], kwargs)
  kFilter,     ///< children[0] | name(children[1..], kwargs); children[0] null in filter blocks
  kTest,       ///< children[0] is name(children[1..], kwargs)
  kUnary,      ///< op children[0]   (op: "-", "+")
  kBinary,     ///< children[0] op children[1]  (+ - * / // % **)
  kCompare,    ///< children[0] ops[0] children[1] ops[1] children[2] ...
  kAnd,
  kOr,
  kNot,
  kCond,    ///< children[1] if children[0] else children[2] (may be null)
  kConcat,  ///< children joined with ~
};

struct Expr {
  Expr() = default;
  /// Iterative: a chain like 1 + 1 + ... is a left-deep tree as long as the template, and
  /// destroying it recursively could overflow the stack before the depth check rejects it.
  ~Expr();
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  ExprKind kind;
  SourcePos pos;
  Value literal;
  std::string name;  ///< variable, attribute, filter or test name; operator for unary/binary
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  ///< comparison operators: == != < <= > >= in notin
};

/// Left-hand side of `set` / loop variables: a name, a tuple of names, or namespace.attr.
struct Target {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string attr;  ///< non-empty: names[0].attr = value
};

enum class StmtKind {
  kText,         ///< text
  kOutput,       ///< {{ expr }}
  kIf,           ///< branches, else_body
  kFor,          ///< target in expr [if cond] body [else else_body]
  kSet,          ///< target = expr
  kSetBlock,     ///< {% set target %}body{% endset %}, optional filter in expr
  kMacro,        ///< name(params=defaults) body
  kCallBlock,    ///< {% call(params) expr %}body{% endcall %}
  kFilterBlock,  ///< {% filter expr %}body{% endfilter %}
  kBreak,
  kContinue,
  kScope,  ///< a plain body: {% generation %}...{% endgeneration %}
};

struct Stmt {
  StmtKind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  Target target;
  Body body;
  Body else_body;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  ///< parallel to params; null where none
  bool recursive = false;
};

}  // namespace geniex::jinja
