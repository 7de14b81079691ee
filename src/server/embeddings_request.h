// POST /v1/embeddings: the request's fields checked into an EmbeddingsRequest (OpenAI's shape:
// input as a string, an array of strings, a token array or an array of token arrays;
// encoding_format float | base64; dimensions), and the reply's JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"
#include "server/api_error.h"

namespace geniex::server {

/// Most inputs one request may carry (OpenAI's limit).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> texts;                  ///< input as text(s)
  std::vector<std::vector<int32_t>> token_inputs;  ///< input as token array(s)
  bool base64 = false;                             ///< encoding_format "base64"
  int32_t dimensions = 0;                          ///< 0: all
  [[nodiscard]] size_t n_inputs() const { return texts.size() + token_inputs.size(); }
};

/// The body parsed and checked; a 400 in OpenAI's shape naming the field otherwise.
ApiResult<EmbeddingsRequest> parse_embeddings_request(std::string_view body);

/// Little-endian float32 bytes of `v`, base64 (RFC 4648, padded): OpenAI's encoding_format
/// "base64".
std::string base64_floats(const std::vector<float>& v);

/// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
/// "usage": {"prompt_tokens", "total_tokens"}}.
Json embeddings_response(const Embeddings& e, const std::string& model, bool base64);

}  // namespace geniex::server
