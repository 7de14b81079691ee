// Parser: tokens -> AST, following jinja2.parser's grammar and operator precedence.
#pragma once

#include <vector>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace geniex::jinja {

/// Parses a whole template. Throws JinjaError(kSyntax) with the position of the problem.
Body parse_template(const std::vector<Token>& tokens, const LineMap& lines);

}  // namespace geniex::jinja
