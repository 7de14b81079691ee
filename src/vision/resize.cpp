// Why integer weights: torch resizes uint8 images with 16-bit fixed-point taps and a uint8
// intermediate; a float resize with one final rounding is off by one on a large share of
// pixels (spec §4.6), so the reference arithmetic is reproduced exactly here.
#include "vision/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace geniex::vision {
namespace {

/// Taps of one output position: first input index, then int16 weights.
struct AxisTaps {
  std::vector<int> first;
  std::vector<int> count;
  int stride = 0;                // weights per output position (max taps)
  std::vector<int16_t> weights;  // stride per output position, zero padded
  int precision = 0;             // fixed-point bits
};

// Separable bilinear ("triangle") filter with antialiasing when shrinking, computed in double
// like ATen: scale = in/out, support = max(scale, 1), centre = scale * (i + 0.5). The double
// weights of one position are made twice (once for the largest weight, which sets the
// precision, once to quantise) so that only int16 weights are stored: a very wide image
// shrunk a lot has about 2 * in_size taps.
AxisTaps compute_taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double support = scale >= 1.0 ? scale : 1.0;
  const double inv_scale = scale >= 1.0 ? 1.0 / scale : 1.0;
  AxisTaps taps;
  // At most ceil(support) * 2 + 1 taps; rounding can ask for one more, which ATen clips.
  taps.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(out_size);
  taps.count.resize(out_size);
  std::vector<double> w(taps.stride);
  // Normalised double weights of output position i into w; returns the tap count.
  auto position = [&](int i) {
    const double center = scale * (i + 0.5);
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = std::clamp(xmax - xmin, 0, taps.stride);
    taps.first[i] = xmin;
    taps.count[i] = n;
    double total = 0.0;
    for (int j = 0; j < n; ++j) {
      double x = (j + xmin - center + 0.5) * inv_scale;
      if (x < 0.0) x = -x;
      w[j] = x < 1.0 ? 1.0 - x : 0.0;
      total += w[j];
    }
    if (total != 0.0) {
      for (int j = 0; j < n; ++j) w[j] /= total;
    }
    return n;
  };
  double max_weight = 0.0;
  for (int i = 0; i < out_size; ++i) {
    const int n = position(i);
    for (int j = 0; j < n; ++j) max_weight = std::max(max_weight, w[j]);
  }
  // The largest precision (< 22 bits) whose biggest weight still fits in int16.
  int p = 0;
  for (p = 0; p < 22; ++p) {
    const int next = static_cast<int>(0.5 + max_weight * static_cast<double>(1 << (p + 1)));
    if (next >= (1 << 15)) break;
  }
  taps.precision = p;
  taps.weights.assign(static_cast<size_t>(out_size) * taps.stride, 0);
  for (int i = 0; i < out_size; ++i) {
    const int n = position(i);
    int16_t* q = taps.weights.data() + static_cast<size_t>(i) * taps.stride;
    for (int j = 0; j < n; ++j) {
      const double v = w[j] * static_cast<double>(1 << p);
      q[j] = static_cast<int16_t>(v < 0 ? -0.5 + v : 0.5 + v);
    }
  }
  return taps;
}

uint8_t round_clamp(int64_t acc, int precision) {
  const int64_t v = acc >> precision;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

// One row of the horizontal pass: `in` has in_w pixels, `out` gets the taps' width.
void horizontal_row(const AxisTaps& t, const uint8_t* in, uint8_t* out) {
  const int64_t bias = int64_t{1} << (t.precision - 1);
  const int out_w = static_cast<int>(t.first.size());
  for (int x = 0; x < out_w; ++x) {
    const int16_t* w = t.weights.data() + static_cast<size_t>(x) * t.stride;
    const uint8_t* src = in + static_cast<size_t>(t.first[x]) * 3;
    for (int c = 0; c < 3; ++c) {
      int64_t acc = bias;
      for (int j = 0; j < t.count[x]; ++j) acc += int64_t{w[j]} * src[j * 3 + c];
      out[x * 3 + c] = round_clamp(acc, t.precision);
    }
  }
}

// Both passes, streamed: the vertical pass reads a window of horizontally resized rows that
// only moves down, so only that window is kept (a tall image is never held at full width).
// A single pass is the same code with identity taps skipped.
RgbImage resize_separable(const RgbImage& src, int out_w, int out_h) {
  const bool do_h = out_w != src.width;
  const bool do_v = out_h != src.height;
  const AxisTaps th = do_h ? compute_taps(src.width, out_w) : AxisTaps{};
  const size_t in_row = static_cast<size_t>(src.width) * 3;
  const size_t mid_row = static_cast<size_t>(out_w) * 3;
  auto source_row = [&](int y, uint8_t* out) {
    const uint8_t* in = src.pixels.data() + static_cast<size_t>(y) * in_row;
    if (do_h) {
      horizontal_row(th, in, out);
    } else {
      std::copy(in, in + in_row, out);
    }
  };
  RgbImage dst;
  dst.width = out_w;
  dst.height = out_h;
  dst.pixels.resize(dst.pixel_count() * 3);
  if (!do_v) {
    for (int y = 0; y < out_h; ++y) source_row(y, dst.pixels.data() + y * mid_row);
    return dst;
  }
  const AxisTaps tv = compute_taps(src.height, out_h);
  const int64_t bias = int64_t{1} << (tv.precision - 1);
  std::deque<std::vector<uint8_t>> window;  // rows [window_first, window_first + size)
  int window_first = 0;
  std::vector<int64_t> acc(mid_row);
  for (int y = 0; y < out_h; ++y) {
    const int first = tv.first[y];
    const int count = tv.count[y];
    while (!window.empty() && window_first < first) {
      window.pop_front();
      ++window_first;
    }
    if (window.empty()) window_first = first;
    while (window_first + static_cast<int>(window.size()) < first + count) {
      window.emplace_back(mid_row);
      source_row(window_first + static_cast<int>(window.size()) - 1, window.back().data());
    }
    const int16_t* w = tv.weights.data() + static_cast<size_t>(y) * tv.stride;
    std::fill(acc.begin(), acc.end(), bias);
    for (int j = 0; j < count; ++j) {
      const uint8_t* in = window[first + j - window_first].data();
      const int64_t wj = w[j];
      for (size_t k = 0; k < mid_row; ++k) acc[k] += wj * in[k];
    }
    uint8_t* out = dst.pixels.data() + static_cast<size_t>(y) * mid_row;
    for (size_t k = 0; k < mid_row; ++k) out[k] = round_clamp(acc[k], tv.precision);
  }
  return dst;
}

}  // namespace

Result<RgbImage> resize_bilinear_aa(const RgbImage& src, int width, int height) {
  if (src.width <= 0 || src.height <= 0 || src.pixels.size() != src.pixel_count() * 3) {
    return invalid_argument("resize: empty or malformed source image");
  }
  if (width <= 0 || height <= 0) {
    return invalid_argument("resize: target size " + std::to_string(width) + "x" +
                            std::to_string(height) + " is not positive");
  }
  if (width == src.width && height == src.height) return src;
  return resize_separable(src, width, height);
}

}  // namespace geniex::vision
