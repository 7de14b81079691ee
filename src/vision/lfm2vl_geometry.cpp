// Every comparison below is in float64 with Python's rounding, because that is what decides
// the sizes in transformers; llama.cpp's float + std::round differs on exact .5 ties.
#include "vision/lfm2vl_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace geniex::vision {
namespace {

// Python 3 round(x) for a float: nearest integer, ties to even.
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

int64_t round_by_factor(int64_t number, int64_t factor) {
  return round_half_even(static_cast<double>(number) / static_cast<double>(factor)) * factor;
}

int clamp_to_int(int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, 0, INT32_MAX)); }

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

Status validate(const Lfm2VlImageParams& p) {
  auto bad = [](const std::string& what) {
    return invalid_argument("lfm2-vl image params: " + what);
  };
  if (p.encoder_patch_size <= 0 || p.encoder_patch_size > 1024) {
    return bad("encoder_patch_size must be in 1..1024");
  }
  if (p.downsample_factor <= 0 || p.downsample_factor > 64) {
    return bad("downsample_factor must be in 1..64");
  }
  if (p.min_image_tokens <= 0 || p.max_image_tokens < p.min_image_tokens ||
      p.max_image_tokens > 65536) {
    return bad("need 0 < min_image_tokens <= max_image_tokens <= 65536");
  }
  if (p.tile_size <= 0 || p.tile_size > 8192 || p.tile_size % p.encoder_patch_size != 0) {
    return bad("tile_size must be a positive multiple of encoder_patch_size, at most 8192");
  }
  if (p.do_image_splitting && (p.min_tiles <= 0 || p.min_tiles > p.max_tiles || p.max_tiles > 64)) {
    return bad("need 0 < min_tiles <= max_tiles <= 64");
  }
  if (!(p.max_pixels_tolerance > 0.0) || !std::isfinite(p.max_pixels_tolerance)) {
    return bad("max_pixels_tolerance must be positive and finite");
  }
  if (!(p.rescale_factor > 0.0) || !std::isfinite(p.rescale_factor)) {
    return bad("rescale_factor must be positive and finite");
  }
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(p.image_mean[c]) || !std::isfinite(p.image_std[c]) ||
        p.image_std[c] == 0.0f) {
      return bad("image_mean must be finite and image_std finite and non-zero");
    }
  }
  return Status::ok_status();
}

ImageSize smart_resize(int height, int width, const Lfm2VlImageParams& p) {
  const int64_t factor = int64_t{p.encoder_patch_size} * p.downsample_factor;
  const int64_t min_px = int64_t{p.min_image_tokens} * p.encoder_patch_size * p.encoder_patch_size *
                         p.downsample_factor * p.downsample_factor;
  const int64_t max_px = int64_t{p.max_image_tokens} * p.encoder_patch_size * p.encoder_patch_size *
                         p.downsample_factor * p.downsample_factor;
  const double h = height;
  const double w = width;
  const double f = static_cast<double>(factor);
  int64_t h_bar = std::max(factor, round_by_factor(height, factor));
  int64_t w_bar = std::max(factor, round_by_factor(width, factor));
  if (h_bar * w_bar > max_px) {
    const double beta = std::sqrt((h * w) / static_cast<double>(max_px));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_px) {
    const double beta = std::sqrt(static_cast<double>(min_px) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {clamp_to_int(h_bar), clamp_to_int(w_bar)};
}

bool is_image_too_large(int height, int width, const Lfm2VlImageParams& p) {
  const int64_t factor = int64_t{p.encoder_patch_size} * p.downsample_factor;
  const int64_t h_bar = std::max<int64_t>(p.encoder_patch_size, round_by_factor(height, factor));
  const int64_t w_bar = std::max<int64_t>(p.encoder_patch_size, round_by_factor(width, factor));
  const int64_t max_px = int64_t{p.max_image_tokens} * p.encoder_patch_size * p.encoder_patch_size *
                         p.downsample_factor * p.downsample_factor;
  // Python compares int * int (exact) with int * float (float64).
  return static_cast<double>(h_bar * w_bar) > static_cast<double>(max_px) * p.max_pixels_tolerance;
}

TileGrid choose_grid(int height, int width, const Lfm2VlImageParams& p) {
  // Candidates (cols, rows) with min_tiles <= cols * rows <= max_tiles, ordered by their
  // product; within one product the order never changes the winner (spec §4.5).
  std::vector<std::pair<int, int>> candidates;
  for (int n = 1; n <= p.max_tiles; ++n) {
    for (int c = 1; c <= n; ++c) {
      if (n % c == 0 && n >= p.min_tiles) candidates.emplace_back(c, n / c);
    }
  }
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  const double area = static_cast<double>(width) * static_cast<double>(height);
  double best_diff = INFINITY;
  TileGrid best{1, 1};
  for (const auto& [c, r] : candidates) {
    const double diff = std::fabs(aspect - static_cast<double>(c) / static_cast<double>(r));
    if (diff < best_diff) {
      best_diff = diff;
      best = {c, r};
    } else if (diff == best_diff) {
      const double target_area = static_cast<double>(p.tile_size) * p.tile_size * c * r;
      if (area > 0.5 * target_area) best = {c, r};
    }
  }
  return best;
}

Result<ImageLayout> plan_image(int height, int width, const Lfm2VlImageParams& p) {
  GENIEX_TRY(validate(p));
  if (height <= 0 || width <= 0) {
    return invalid_argument("lfm2-vl: image size " + std::to_string(width) + "x" +
                            std::to_string(height) + " is not positive");
  }
  const int ps = p.encoder_patch_size;
  auto make_view = [&](ImageSize size) {
    ViewGeometry v;
    v.size = size;
    v.patches_h = size.height / ps;
    v.patches_w = size.width / ps;
    v.tokens =
        ceil_div(v.patches_h, p.downsample_factor) * ceil_div(v.patches_w, p.downsample_factor);
    return v;
  };
  ImageLayout layout;
  layout.source = {height, width};
  layout.resized = smart_resize(height, width, p);
  const bool splitting = p.do_image_splitting && !(p.min_tiles == 1 && p.max_tiles == 1);
  if (splitting && is_image_too_large(height, width, p)) {
    layout.tiled = true;
    layout.grid = choose_grid(height, width, p);
    for (int r = 0; r < layout.grid.rows; ++r) {
      for (int c = 0; c < layout.grid.cols; ++c) {
        ViewGeometry v = make_view({p.tile_size, p.tile_size});
        v.tile_row = r;
        v.tile_col = c;
        layout.views.push_back(v);
      }
    }
    if (p.use_thumbnail && layout.grid.cols * layout.grid.rows != 1) {
      layout.has_thumbnail = true;
      ViewGeometry v = make_view(layout.resized);
      v.is_thumbnail = true;
      layout.views.push_back(v);
    }
  } else {
    layout.views.push_back(make_view(layout.resized));
  }
  for (const auto& v : layout.views) layout.total_tokens += v.tokens;
  return layout;
}

}  // namespace geniex::vision
