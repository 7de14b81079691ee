// The prompt of a request with images: each image's placeholder token becomes its expansion
// (markers and one `<image>` per feature row), and every `<image>` position gets its feature row
// (filled when the image is encoded, PromptImages::ensure) and a cache key in place of its id
// (kImageKeyBase + a hash of the image's pixels and the row), so the prefix cache reuses an
// image's KV only for the same image.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/request.h"
#include "engine/vision_encoder.h"

namespace geniex::engine {

/// Ids from here up are image keys (above any vocabulary).
inline constexpr int32_t kImageKeyBase = 0x40000000;

struct ImagePrompt {
  std::vector<int32_t> keys;  ///< the request's prompt (token ids, image keys)
  std::shared_ptr<PromptImages> images;
};

/// `ids` holds exactly images.size() occurrences of `image_token` (one per image, in order);
/// kInvalidArgument naming both counts otherwise. The result's images have no encoder yet
/// (PromptImages::encode) and a zeroed table.
Result<ImagePrompt> build_image_prompt(std::span<const int32_t> ids, int32_t image_token,
                                       std::span<const PreparedImage> images, uint32_t n_embd);

}  // namespace geniex::engine
