#include "server/token_texts.h"

namespace geniex::server {

std::string TokenTexts::text(int32_t token) const {
  if (token < 0 || token >= model_.info().n_vocab) return {};
  auto t = model_.detokenize(std::span<const int32_t>(&token, 1));
  return t.ok() ? *t : std::string();
}

const std::vector<std::string>& TokenTexts::table() {
  std::call_once(once_, [this] {
    const int32_t n = model_.info().n_vocab;
    table_.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) table_[static_cast<size_t>(i)] = text(i);
  });
  return table_;
}

}  // namespace geniex::server
