// The graph of one image view through the SigLIP2 encoder and the LFM2-VL projector
// (shared/spec/LFM2.md §2.3, §3): patches in, text-space embeddings out, one row per `<image>`
// token of the view. The host prepares what depends only on the view's size: the patches in the
// conv weight's (c, ky, kx) order, the learned position table resized to the patch grid (a
// constant per grid size, so it is computed once per size, not per image), and the row order of
// the pixel unshuffle.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"
#include "graph/graph.h"
#include "graph/run_reference.h"
#include "models/forward_graph.h"
#include "models/vision_model.h"

namespace geniex::models {

/// A view's graph. Stages: "patch embedding", "vision layer N", "projector".
struct VisionGraph {
  graph::Graph graph;
  graph::NodeId patches = 0;      ///< input F32 [3 P P, n_patches]: patch_rows()
  graph::NodeId pos_embd = 0;     ///< input F32 [Ev, n_patches]: resize_position_table()
  graph::NodeId positions = 0;    ///< input I32 [n_patches]: zeros (attention sees every patch)
  graph::NodeId unshuffle = 0;    ///< input I32 [n_patches]: unshuffle_rows()
  graph::NodeId features = 0;     ///< F32 [E_text, n_tokens]
  graph::NodeId encoder_out = 0;  ///< F32 [Ev, n_patches]: the encoder after post-LN
  int32_t patches_h = 0, patches_w = 0;
  int32_t n_tokens = 0;
  std::vector<WeightBinding> weights;
};

/// The graph for a view of patches_h x patches_w patches (both multiples of the projector's
/// scale factor). kInvalidArgument for other sizes.
Result<VisionGraph> build_vision_graph(const VisionConfig& config, const VisionWeights& weights,
                                       int32_t patches_h, int32_t patches_w);

/// Binds the graph's weights to the file's bytes.
void bind_vision_weights(const VisionGraph& vg, graph::Bindings& bindings);

/// A view's normalised pixels (height x width x 3, channel last) as the patch embedding's
/// input: one row of 3 P P values per patch (raster order), each in (channel, ky, kx) order —
/// the layout of the conv weight [Ev, 3, P, P], so the embedding is one matmul.
std::vector<float> patch_rows(std::span<const float> hwc, int32_t height, int32_t width,
                              int32_t patch);

/// The learned position table (n_side x n_side cells of Ev values, GGUF [Ev, n_side^2] of any
/// dequantizable type) resized to patches_h x patches_w cells as transformers does it
/// (F.interpolate bilinear, align_corners=False, antialias=True; separable, in double) and
/// laid out as [Ev, n_patches] (patch raster order). Unchanged when the grid is n_side x n_side.
Result<std::vector<float>> resize_position_table(const gguf::TensorInfo& table, int32_t n_side,
                                                 int32_t patches_h, int32_t patches_w);

/// Row order of the pixel unshuffle: output token (I, J) (raster over the (h/f) x (w/f) grid)
/// concatenates patches (f I + dy, f J + dx) for dy, dx in [0, f) (dy outer); entry
/// t * f^2 + dy * f + dx is that patch's raster index.
std::vector<int32_t> unshuffle_rows(int32_t patches_h, int32_t patches_w, int32_t factor);

/// Runs one view through the reference ops: features, n_tokens x E_text row-major. For tests.
Result<std::vector<float>> run_vision_reference(const VisionConfig& config,
                                                const VisionWeights& weights,
                                                std::span<const float> hwc, int32_t height,
                                                int32_t width);

}  // namespace geniex::models
