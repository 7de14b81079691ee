// The text that replaces one `<image>` placeholder in an LFM2-VL prompt (spec LFM2.md §4.7,
// transformers' Lfm2VlProcessor._build_image_tokens), as marker text or as token ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "vision/lfm2vl_geometry.h"

namespace geniex::vision {

/// Ids of the image marker tokens; defaults are the LFM2 vocabulary's (tokenizer_config.json).
struct Lfm2VlImageTokenIds {
  int32_t image = 396;             ///< `<image>`, one per projected feature
  int32_t img_row_col_base = 397;  ///< `<|img_row_1_col_1|>`; row r, col c (1-based) is
                                   ///< base + 10 (r - 1) + (c - 1)
  int32_t thumbnail = 497;         ///< `<|img_thumbnail|>`
  int32_t image_start = 498;       ///< `<|image_start|>`
  int32_t image_end = 499;         ///< `<|image_end|>`
};

/// Whether markers are emitted; false is the processor's use_image_special_tokens=false.
struct Lfm2VlPromptOptions {
  bool use_image_special_tokens = true;
};

/// The expansion of one image as text: `<|image_start|>`, per tile `<|img_row_R_col_C|>` and
/// its `<image>` run, then `<|img_thumbnail|>` and the thumbnail's run, `<|image_end|>`; a
/// single view is `<|image_start|>` + `<image>` x N + `<|image_end|>`.
std::string expand_image_text(const ImageLayout& layout, const Lfm2VlPromptOptions& options = {});

/// The same expansion as token ids. kInvalidArgument when a tile lies outside the 10 x 10
/// rows/columns the vocabulary has markers for.
Result<std::vector<int32_t>> expand_image_ids(const ImageLayout& layout,
                                              const Lfm2VlImageTokenIds& ids = {},
                                              const Lfm2VlPromptOptions& options = {});

}  // namespace geniex::vision
