// The uint8 antialiased bilinear resize of torchvision's resize(BILINEAR, antialias=True) on a
// uint8 tensor (ATen's CPU separable kernel), bit for bit: spec LFM2.md §4.6.
#pragma once

#include "core/status.h"
#include "vision/image.h"

namespace geniex::vision {

/// Resizes `src` to width x height. Horizontal pass first, then vertical, each skipped when
/// its size is unchanged; the intermediate image is uint8. kInvalidArgument for an empty
/// source or a non-positive target size.
Result<RgbImage> resize_bilinear_aa(const RgbImage& src, int width, int height);

}  // namespace geniex::vision
