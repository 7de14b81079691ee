// Model::Impl helpers: token checks, context shift, the state-file fingerprint.
#include <algorithm>

#include "engine/kv_rotate.h"
#include "engine/model_impl.h"
#include "models/forward_graph.h"

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

Status Model::Impl::shift_context(runtime::KvManager::SeqId seq) {
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
  // A rotated cache's rows mean something else than unrotated ones of the same type.
  const models::KvRotation rot = models::kv_rotation(config, kv->spec().type);
  const std::string rotation =
      rot.any() ? "|rot=k" + std::to_string(rot.k) + "v" + std::to_string(rot.v) : "";
  return config.arch_name + "|" + config.name + "|layers=" + std::to_string(config.n_layer) +
         "|embd=" + std::to_string(config.n_embd) + "|vocab=" + std::to_string(config.n_vocab) +
         "|bytes=" + std::to_string(file->file_size()) +
         "|kv=" + std::string(ggml_type_name(kv->spec().type)) + rotation;
}

}  // namespace geniex
