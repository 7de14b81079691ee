// LFM2-VL image geometry, as transformers 5.23.0's Lfm2VlImageProcessor decides it (spec
// LFM2.md §4.1-4.5): smart_resize, whether to tile, which grid, and the resulting views with
// their patch grids and token counts. Pure arithmetic on sizes; no pixels.
#pragma once

#include <array>
#include <vector>

#include "core/status.h"

namespace geniex::vision {

/// The processor's parameters (processor_config.json keys), transformers' defaults.
struct Lfm2VlImageParams {
  int min_image_tokens = 64;
  int max_image_tokens = 256;
  int tile_size = 512;
  int min_tiles = 2;
  int max_tiles = 10;
  double max_pixels_tolerance = 2.0;
  /// false is transformers' do_image_splitting=false (min_tiles = max_tiles = 1).
  bool do_image_splitting = true;
  /// LFM2-VL-450M's processor_config.json sets false; the class default is true.
  bool use_thumbnail = true;
  int downsample_factor = 2;
  int encoder_patch_size = 16;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> image_mean = {0.5f, 0.5f, 0.5f};
  std::array<float, 3> image_std = {0.5f, 0.5f, 0.5f};
};

/// kInvalidArgument when a parameter is out of its sane range (sizes not positive, min_tiles
/// over max_tiles, more than 64 tiles, a zero std, ...).
Status validate(const Lfm2VlImageParams& params);

/// A size in pixels.
struct ImageSize {
  int height = 0;
  int width = 0;
  bool operator==(const ImageSize&) const = default;
};

/// A tile grid: `cols` tiles across, `rows` down.
struct TileGrid {
  int cols = 1;
  int rows = 1;
  bool operator==(const TileGrid&) const = default;
};

/// transformers' smart_resize: both sides multiples of patch * downsample, area within the
/// token budget, Python's round-half-to-even in float64.
ImageSize smart_resize(int height, int width, const Lfm2VlImageParams& params);

/// transformers' _is_image_too_large: the rounded area exceeds max tokens * tolerance.
bool is_image_too_large(int height, int width, const Lfm2VlImageParams& params);

/// The grid whose aspect ratio is closest to width/height among min_tiles..max_tiles tiles,
/// with transformers' tie rule (a later, bigger grid wins a tie when the image covers more than
/// half of it).
TileGrid choose_grid(int height, int width, const Lfm2VlImageParams& params);

/// One view fed to the vision encoder.
struct ViewGeometry {
  ImageSize size;     ///< pixels of the view
  int patches_h = 0;  ///< size.height / encoder_patch_size
  int patches_w = 0;  ///< size.width / encoder_patch_size
  int tokens = 0;     ///< ceil(patches_h / f) * ceil(patches_w / f), f = downsample
  bool is_thumbnail = false;
  int tile_row = -1;  ///< 0-based grid row of a tile; -1 for a whole image or thumbnail
  int tile_col = -1;  ///< 0-based grid column of a tile; -1 otherwise
};

/// Every view of one image, in the order the processor emits them.
struct ImageLayout {
  ImageSize source;   ///< the decoded image
  ImageSize resized;  ///< smart_resize(source): the single view, or the thumbnail
  bool tiled = false;
  TileGrid grid;  ///< 1 x 1 when not tiled
  bool has_thumbnail = false;
  std::vector<ViewGeometry> views;  ///< tiles row-major, then the thumbnail; or one view
  int total_tokens = 0;             ///< sum of the views' tokens
};

/// The layout of an image of `height` x `width`. kInvalidArgument for a non-positive size or
/// invalid parameters.
Result<ImageLayout> plan_image(int height, int width, const Lfm2VlImageParams& params);

}  // namespace geniex::vision
