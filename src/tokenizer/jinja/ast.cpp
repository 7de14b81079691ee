// Expression tree teardown without recursion.
#include "tokenizer/jinja/ast.h"

namespace geniex::jinja {

Expr::~Expr() {
  std::vector<ExprPtr> pending;
  auto take_children = [&pending](Expr& e) {
    for (auto& c : e.children)
      if (c) pending.push_back(std::move(c));
    for (auto& kv : e.kwargs)
      if (kv.second) pending.push_back(std::move(kv.second));
  };
  take_children(*this);
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    take_children(*e);
    // `e` is destroyed here with no children left.
  }
}

}  // namespace geniex::jinja
