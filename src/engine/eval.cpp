// Model::Impl evaluation: prompt chunks and single decode steps through the StepRunner, context
// shift, and state files.
#include <algorithm>

#include "engine/kv_rotate.h"
#include "engine/model_impl.h"

namespace geniex {

Status Model::Impl::check_tokens(std::span<const int32_t> tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= config.n_vocab) {
      return invalid_argument("token id " + std::to_string(tokens[i]) + " at index " +
                              std::to_string(i) + " is outside the vocabulary [0, " +
                              std::to_string(config.n_vocab) + ")");
    }
  }
  return {};
}

int32_t Model::Impl::reuse_prefix(std::span<const int32_t> prompt) {
  return kv->reuse_prefix(seq, prompt);
}

Result<std::vector<float>> Model::Impl::eval(std::span<const int32_t> tokens, bool all_logits) {
  if (tokens.empty()) return invalid_argument("eval: no tokens");
  GENIEX_TRY(check_tokens(tokens));
  const int32_t start = kv->n_tokens(seq);
  if (static_cast<int64_t>(start) + static_cast<int64_t>(tokens.size()) > n_ctx) {
    return out_of_range("context is full: " + std::to_string(start) + " cached + " +
                        std::to_string(tokens.size()) + " new tokens exceed the context size " +
                        std::to_string(n_ctx));
  }
  const size_t n_vocab = config.n_vocab;
  std::vector<float> out(all_logits ? tokens.size() * n_vocab : n_vocab);
  for (size_t off = 0; off < tokens.size(); off += static_cast<size_t>(n_batch)) {
    const size_t t = std::min<size_t>(static_cast<size_t>(n_batch), tokens.size() - off);
    const bool last_chunk = off + t == tokens.size();
    engine::StepItem item{seq, tokens.subspan(off, t), all_logits};
    auto logits = runner->run(std::span<const engine::StepItem>(&item, 1));
    if (!logits.ok()) {
      kv->truncate(seq, start);
      return logits.status();
    }
    if (all_logits) {
      std::copy(logits->begin(), logits->end(), out.begin() + static_cast<long>(off * n_vocab));
    } else if (last_chunk) {
      std::copy(logits->begin(), logits->end(), out.begin());
    }
  }
  return out;
}

Result<std::span<const float>> Model::Impl::decode_one(int32_t token) {
  GENIEX_TRY(check_tokens(std::span<const int32_t>(&token, 1)));
  if (kv->n_tokens(seq) + 1 > n_ctx) {
    return out_of_range("context is full: " + std::to_string(kv->n_tokens(seq)) +
                        " cached tokens fill the context size " + std::to_string(n_ctx));
  }
  engine::StepItem item{seq, std::span<const int32_t>(&token, 1), false};
  return runner->run(std::span<const engine::StepItem>(&item, 1));
}

Status Model::Impl::shift_context() {
  const int32_t n = kv->n_tokens(seq);
  const int32_t n_keep = std::min(shift_keep, n - 2);
  const int32_t n_discard = (n - n_keep) / 2;
  if (n_discard < 1) return out_of_range("context shift: nothing to drop");
  auto rotate = [this](int il, uint8_t* rows, int64_t n_rows, int32_t delta) {
    return engine::rotate_k_rows(config, weights, kv->spec().type, static_cast<uint32_t>(il), rows,
                                 n_rows, delta);
  };
  return kv->shift(seq, n_keep, n_discard, rotate);
}

std::string Model::Impl::state_fingerprint() const {
  return config.arch_name + "|" + config.name + "|layers=" + std::to_string(config.n_layer) +
         "|embd=" + std::to_string(config.n_embd) + "|vocab=" + std::to_string(config.n_vocab) +
         "|bytes=" + std::to_string(file->file_size()) +
         "|kv=" + std::string(ggml_type_name(kv->spec().type));
}

}  // namespace geniex
