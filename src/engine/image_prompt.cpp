#include "engine/image_prompt.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace geniex::engine {

Result<ImagePrompt> build_image_prompt(std::span<const int32_t> ids, int32_t image_token,
                                       std::span<const PreparedImage> images, uint32_t n_embd) {
  const auto n_slots = static_cast<size_t>(std::count(ids.begin(), ids.end(), image_token));
  if (n_slots != images.size())
    return invalid_argument("the prompt has " + std::to_string(n_slots) +
                            " image placeholder(s) for " + std::to_string(images.size()) +
                            " image(s)");
  ImagePrompt out;
  out.images = std::make_shared<PromptImages>();
  PromptImages& pi = *out.images;
  size_t total = ids.size();
  for (const auto& im : images) total += im.ids.size() - 1;
  out.keys.reserve(total);
  pi.rows.reserve(total);
  pi.ids.reserve(total);
  size_t next = 0;
  for (const int32_t id : ids) {
    if (id != image_token) {
      out.keys.push_back(id);
      pi.rows.push_back(-1);
      pi.ids.push_back(id);
      continue;
    }
    const PreparedImage& im = images[next++];
    const uint64_t h = im.hash;
    const auto first_row = static_cast<int32_t>(pi.table.size() / n_embd);
    pi.table.resize(pi.table.size() + static_cast<size_t>(im.n_image_tokens) * n_embd, 0.0f);
    PromptImages::Slot slot;
    slot.first_pos = static_cast<int32_t>(pi.ids.size());
    slot.first_row = first_row;
    slot.n_rows = im.n_image_tokens;
    int32_t j = 0;
    for (const int32_t x : im.ids) {
      pi.ids.push_back(x);
      if (x != image_token) {
        out.keys.push_back(x);
        pi.rows.push_back(-1);
        continue;
      }
      out.keys.push_back(kImageKeyBase +
                         static_cast<int32_t>((h + static_cast<uint64_t>(j)) & 0x3FFFFFFFu));
      pi.rows.push_back(first_row + j);
      ++j;
    }
    if (j != im.n_image_tokens)
      return internal_error("image prompt: " + std::to_string(j) + " <image> ids for " +
                            std::to_string(im.n_image_tokens) + " rows");
    slot.end_pos = static_cast<int32_t>(pi.ids.size());
    pi.slots.push_back(slot);
  }
  pi.n_embd = n_embd;
  return out;
}

}  // namespace geniex::engine
