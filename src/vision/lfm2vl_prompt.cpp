// Text and ids are built by one walk over the layout so the two forms cannot drift apart.
#include "vision/lfm2vl_prompt.h"

#include <string>

namespace geniex::vision {
namespace {

constexpr int kMarkerGrid = 10;  // the vocabulary has <|img_row_R_col_C|> for R, C in 1..10

// Calls marker(kind, row, col) and images(count) in prompt order. Kinds: 's' start, 't' tile
// (1-based row/col), 'h' thumbnail, 'e' end.
template <typename Marker, typename Images>
void walk(const ImageLayout& layout, const Lfm2VlPromptOptions& options, Marker marker,
          Images images) {
  const bool markers = options.use_image_special_tokens;
  if (markers) marker('s', 0, 0);
  for (const ViewGeometry& v : layout.views) {
    if (v.tile_row >= 0 && layout.views.size() > 1) {
      if (markers) marker('t', v.tile_row + 1, v.tile_col + 1);
    } else if (v.is_thumbnail && markers) {
      marker('h', 0, 0);
    }
    images(v.tokens);
  }
  if (markers) marker('e', 0, 0);
}

}  // namespace

std::string expand_image_text(const ImageLayout& layout, const Lfm2VlPromptOptions& options) {
  std::string out;
  walk(
      layout, options,
      [&](char kind, int row, int col) {
        switch (kind) {
          case 's': out += "<|image_start|>"; break;
          case 't':
            out += "<|img_row_" + std::to_string(row) + "_col_" + std::to_string(col) + "|>";
            break;
          case 'h': out += "<|img_thumbnail|>"; break;
          default: out += "<|image_end|>"; break;
        }
      },
      [&](int count) {
        for (int i = 0; i < count; ++i) out += "<image>";
      });
  return out;
}

Result<std::vector<int32_t>> expand_image_ids(const ImageLayout& layout,
                                              const Lfm2VlImageTokenIds& ids,
                                              const Lfm2VlPromptOptions& options) {
  if (layout.grid.rows > kMarkerGrid || layout.grid.cols > kMarkerGrid) {
    return invalid_argument("lfm2-vl prompt: a " + std::to_string(layout.grid.cols) + "x" +
                            std::to_string(layout.grid.rows) +
                            " grid has tiles without <|img_row_R_col_C|> markers (max 10x10)");
  }
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(layout.total_tokens) + layout.views.size() + 2);
  walk(
      layout, options,
      [&](char kind, int row, int col) {
        switch (kind) {
          case 's': out.push_back(ids.image_start); break;
          case 't':
            out.push_back(ids.img_row_col_base + kMarkerGrid * (row - 1) + (col - 1));
            break;
          case 'h': out.push_back(ids.thumbnail); break;
          default: out.push_back(ids.image_end); break;
        }
      },
      [&](int count) { out.insert(out.end(), static_cast<size_t>(count), ids.image); });
  return out;
}

}  // namespace geniex::vision
