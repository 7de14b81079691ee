#include "models/vision_graph.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/dtype.h"
#include "quant/quant.h"

namespace geniex::models {

namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

class VisionBuilder {
 public:
  explicit VisionBuilder(VisionGraph& vg) : vg_(vg) {}

  // A weight node over the whole tensor, shaped `ne` when given (same bytes, other view).
  NodeId weight(const gguf::TensorInfo* t, std::array<int64_t, 4> ne = {0, 0, 0, 0}) {
    if (ne[0] == 0) {
      for (size_t i = 0; i < 4; ++i) ne[i] = static_cast<int64_t>(t->ne[i]);
    }
    const NodeId id =
        vg_.graph.add_weight(graph::make_desc(t->type, ne[0], ne[1], ne[2], ne[3]), t->name);
    vg_.weights.push_back({id, t, 0, 0});
    return id;
  }

  Result<NodeId> op(OpKind kind, const std::vector<NodeId>& in, const OpParams& p = {},
                    std::string name = {}) {
    if (name.empty()) name = vg_.graph.stage_label(vg_.graph.current_stage());
    return vg_.graph.add_op(kind, in, p, std::move(name));
  }

  Result<NodeId> linear(NodeId x, const gguf::TensorInfo* w, const gguf::TensorInfo* b) {
    GENIEX_ASSIGN_OR_RETURN(NodeId y, op(OpKind::kMatMul, {weight(w), x}, {}, w->name));
    if (b == nullptr) return y;
    return op(OpKind::kAdd, {y, weight(b)});
  }

  Result<NodeId> layer_norm(NodeId x, const gguf::TensorInfo* w, const gguf::TensorInfo* b,
                            float eps) {
    OpParams p;
    p.eps = eps;
    std::vector<NodeId> in = {x};
    if (w != nullptr) in.push_back(weight(w));
    if (w != nullptr && b != nullptr) in.push_back(weight(b));
    return op(OpKind::kLayerNorm, in, p);
  }

  Result<NodeId> reshape(NodeId x, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    OpParams p;
    p.ne = {ne0, ne1, ne2, 1};
    return op(OpKind::kReshape, {x}, p);
  }

 private:
  VisionGraph& vg_;
};

// Per-axis antialiased bilinear weights (PyTorch's _upsample_bilinear2d_aa, align_corners =
// False): output i reads inputs [first, first + taps.size()) with normalised weights.
struct AxisTaps {
  int32_t first = 0;
  std::vector<double> w;
};

std::vector<AxisTaps> axis_taps(int32_t in, int32_t out) {
  std::vector<AxisTaps> taps(static_cast<size_t>(out));
  const double scale = static_cast<double>(in) / out;
  const double support = scale >= 1.0 ? scale : 1.0;
  const double inv = scale >= 1.0 ? 1.0 / scale : 1.0;
  for (int32_t i = 0; i < out; ++i) {
    const double center = scale * (i + 0.5);
    const int32_t lo = std::max(static_cast<int32_t>(center - support + 0.5), 0);
    const int32_t hi = std::min(static_cast<int32_t>(center + support + 0.5), in);
    AxisTaps& t = taps[static_cast<size_t>(i)];
    t.first = lo;
    double total = 0.0;
    for (int32_t j = lo; j < hi; ++j) {
      const double x = (j - center + 0.5) * inv;
      const double w = std::max(0.0, 1.0 - std::abs(x));
      t.w.push_back(w);
      total += w;
    }
    if (total > 0.0) {
      for (double& w : t.w) w /= total;
    }
  }
  return taps;
}

}  // namespace

std::vector<float> patch_rows(std::span<const float> hwc, int32_t height, int32_t width,
                              int32_t patch) {
  const int32_t ph = height / patch, pw = width / patch;
  const size_t row = static_cast<size_t>(3) * patch * patch;
  std::vector<float> out(static_cast<size_t>(ph) * pw * row);
  for (int32_t py = 0; py < ph; ++py) {
    for (int32_t px = 0; px < pw; ++px) {
      float* dst = out.data() + (static_cast<size_t>(py) * pw + px) * row;
      for (int32_t c = 0; c < 3; ++c) {
        for (int32_t ky = 0; ky < patch; ++ky) {
          const size_t y = static_cast<size_t>(py) * patch + ky;
          for (int32_t kx = 0; kx < patch; ++kx) {
            const size_t x = static_cast<size_t>(px) * patch + kx;
            *dst++ = hwc[(y * static_cast<size_t>(width) + x) * 3 + static_cast<size_t>(c)];
          }
        }
      }
    }
  }
  return out;
}

Result<std::vector<float>> resize_position_table(const gguf::TensorInfo& table, int32_t n_side,
                                                 int32_t patches_h, int32_t patches_w) {
  const auto e = static_cast<size_t>(table.ne[0]);
  const auto cells = static_cast<size_t>(n_side) * static_cast<size_t>(n_side);
  if (table.ne[1] != cells || patches_h < 1 || patches_w < 1)
    return invalid_argument("vision: position table " + table.name + " does not hold " +
                            std::to_string(n_side) + "x" + std::to_string(n_side) + " cells");
  if (!quant::can_dequantize(table.type))
    return unimplemented("vision: position table type " + std::string(ggml_type_name(table.type)) +
                         " cannot be read");
  std::vector<float> src(e * cells);
  const uint64_t row_bytes = ggml_row_bytes(table.type, e).value_or(0);
  for (size_t r = 0; r < cells; ++r) {
    GENIEX_TRY(quant::dequantize_row(table.type, table.data.subspan(r * row_bytes, row_bytes),
                                     std::span<float>(src.data() + r * e, e)));
  }
  if (patches_h == n_side && patches_w == n_side) return src;
  // Horizontal pass (n_side rows x patches_w), then vertical, in double.
  const std::vector<AxisTaps> tx = axis_taps(n_side, patches_w);
  const std::vector<AxisTaps> ty = axis_taps(n_side, patches_h);
  std::vector<double> mid(static_cast<size_t>(n_side) * patches_w * e, 0.0);
  for (int32_t y = 0; y < n_side; ++y) {
    for (int32_t x = 0; x < patches_w; ++x) {
      double* dst = mid.data() + (static_cast<size_t>(y) * patches_w + x) * e;
      const AxisTaps& t = tx[static_cast<size_t>(x)];
      for (size_t j = 0; j < t.w.size(); ++j) {
        const float* s = src.data() + (static_cast<size_t>(y) * n_side + t.first + j) * e;
        for (size_t c = 0; c < e; ++c) dst[c] += t.w[j] * s[c];
      }
    }
  }
  std::vector<float> out(static_cast<size_t>(patches_h) * patches_w * e);
  std::vector<double> acc(e);
  for (int32_t y = 0; y < patches_h; ++y) {
    const AxisTaps& t = ty[static_cast<size_t>(y)];
    for (int32_t x = 0; x < patches_w; ++x) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < t.w.size(); ++j) {
        const double* s = mid.data() + ((t.first + j) * static_cast<size_t>(patches_w) + x) * e;
        for (size_t c = 0; c < e; ++c) acc[c] += t.w[j] * s[c];
      }
      float* dst = out.data() + (static_cast<size_t>(y) * patches_w + x) * e;
      for (size_t c = 0; c < e; ++c) dst[c] = static_cast<float>(acc[c]);
    }
  }
  return out;
}

std::vector<int32_t> unshuffle_rows(int32_t patches_h, int32_t patches_w, int32_t f) {
  std::vector<int32_t> idx;
  idx.reserve(static_cast<size_t>(patches_h) * patches_w);
  for (int32_t i = 0; i < patches_h / f; ++i) {
    for (int32_t j = 0; j < patches_w / f; ++j) {
      for (int32_t dy = 0; dy < f; ++dy) {
        for (int32_t dx = 0; dx < f; ++dx) idx.push_back((f * i + dy) * patches_w + f * j + dx);
      }
    }
  }
  return idx;
}

Result<VisionGraph> build_vision_graph(const VisionConfig& c, const VisionWeights& w,
                                       int32_t patches_h, int32_t patches_w) {
  const auto f = static_cast<int32_t>(c.scale_factor);
  if (patches_h < f || patches_w < f || patches_h % f != 0 || patches_w % f != 0)
    return invalid_argument("vision: a view of " + std::to_string(patches_h) + "x" +
                            std::to_string(patches_w) + " patches is not a multiple of the " +
                            "projector's scale factor " + std::to_string(f));
  if (w.layers.size() != c.n_layer || w.patch_w == nullptr || w.mm1_w == nullptr)
    return invalid_argument("vision: weights do not match the config");
  VisionGraph vg;
  vg.patches_h = patches_h;
  vg.patches_w = patches_w;
  const int64_t n = static_cast<int64_t>(patches_h) * patches_w;
  vg.n_tokens = static_cast<int32_t>(n / (f * f));
  const int64_t e = c.n_embd;
  const int64_t d = c.head_dim();
  const int64_t heads = c.n_head;
  const int64_t k_in = 3LL * c.patch_size * c.patch_size;
  VisionBuilder b(vg);

  vg.patches = vg.graph.add_input(graph::make_desc(GgmlType::kF32, k_in, n), "patches");
  vg.pos_embd = vg.graph.add_input(graph::make_desc(GgmlType::kF32, e, n), "pos_embd");
  vg.positions = vg.graph.add_input(graph::make_desc(GgmlType::kI32, n), "positions");
  vg.unshuffle = vg.graph.add_input(graph::make_desc(GgmlType::kI32, n), "unshuffle");
  vg.graph.set_batch_tokens(static_cast<int32_t>(n));

  vg.graph.begin_stage(0, "patch embedding");
  GENIEX_ASSIGN_OR_RETURN(
      NodeId x, b.op(OpKind::kMatMul, {b.weight(w.patch_w, {k_in, e, 1, 1}), vg.patches}, {},
                     w.patch_w->name));
  GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, b.weight(w.patch_b)}));
  GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, vg.pos_embd}));

  OpParams ap;
  ap.attn.causal = false;
  ap.attn.scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    const VisionLayerWeights& l = w.layers[il];
    vg.graph.begin_stage(static_cast<int32_t>(il) + 1, "vision layer " + std::to_string(il));
    GENIEX_ASSIGN_OR_RETURN(NodeId h, b.layer_norm(x, l.ln1_w, l.ln1_b, c.eps));
    GENIEX_ASSIGN_OR_RETURN(NodeId q, b.linear(h, l.q_w, l.q_b));
    GENIEX_ASSIGN_OR_RETURN(NodeId k, b.linear(h, l.k_w, l.k_b));
    GENIEX_ASSIGN_OR_RETURN(NodeId v, b.linear(h, l.v_w, l.v_b));
    GENIEX_ASSIGN_OR_RETURN(q, b.reshape(q, d, heads, n));
    GENIEX_ASSIGN_OR_RETURN(k, b.reshape(k, d, heads, n));
    GENIEX_ASSIGN_OR_RETURN(v, b.reshape(v, d, heads, n));
    GENIEX_ASSIGN_OR_RETURN(NodeId a,
                            b.op(OpKind::kAttention, {q, k, v, vg.positions, vg.positions}, ap));
    GENIEX_ASSIGN_OR_RETURN(a, b.reshape(a, e, n));
    GENIEX_ASSIGN_OR_RETURN(a, b.linear(a, l.out_w, l.out_b));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, a}));
    GENIEX_ASSIGN_OR_RETURN(h, b.layer_norm(x, l.ln2_w, l.ln2_b, c.eps));
    GENIEX_ASSIGN_OR_RETURN(h, b.linear(h, l.up_w, l.up_b));
    GENIEX_ASSIGN_OR_RETURN(h, b.op(OpKind::kGelu, {h}));
    GENIEX_ASSIGN_OR_RETURN(h, b.linear(h, l.down_w, l.down_b));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, h}));
  }

  vg.graph.begin_stage(static_cast<int32_t>(c.n_layer) + 1, "projector");
  GENIEX_ASSIGN_OR_RETURN(x, b.layer_norm(x, w.post_ln_w, w.post_ln_b, c.eps));
  vg.encoder_out = x;
  // Pixel unshuffle: gather the f x f neighbours of each output token, then view them as one
  // row of f^2 Ev values (channel = (dy f + dx) Ev + c).
  GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kGetRows, {x, vg.unshuffle}));
  GENIEX_ASSIGN_OR_RETURN(x, b.reshape(x, e * f * f, vg.n_tokens));
  if (w.mm_norm_w != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(x, b.layer_norm(x, w.mm_norm_w, w.mm_norm_b, c.projector_eps));
  }
  GENIEX_ASSIGN_OR_RETURN(x, b.linear(x, w.mm1_w, w.mm1_b));
  GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kGeluErf, {x}));
  GENIEX_ASSIGN_OR_RETURN(x, b.linear(x, w.mm2_w, w.mm2_b));
  vg.features = x;
  return vg;
}

void bind_vision_weights(const VisionGraph& vg, graph::Bindings& bindings) {
  for (const auto& wb : vg.weights) bindings.bind_weight(wb.node, wb.tensor->type, wb.tensor->data);
}

Result<std::vector<float>> run_vision_reference(const VisionConfig& c, const VisionWeights& w,
                                                std::span<const float> hwc, int32_t height,
                                                int32_t width) {
  const auto p = static_cast<int32_t>(c.patch_size);
  if (height % p != 0 || width % p != 0 || hwc.size() != static_cast<size_t>(height) * width * 3)
    return invalid_argument("vision: a " + std::to_string(width) + "x" + std::to_string(height) +
                            " view does not fit the patch size or the pixel count");
  GENIEX_ASSIGN_OR_RETURN(VisionGraph vg, build_vision_graph(c, w, height / p, width / p));
  const std::vector<float> patches = patch_rows(hwc, height, width, p);
  GENIEX_ASSIGN_OR_RETURN(std::vector<float> pos,
                          resize_position_table(*w.pos, static_cast<int32_t>(c.n_pos_side),
                                                vg.patches_h, vg.patches_w));
  const std::vector<int32_t> zeros(static_cast<size_t>(vg.patches_h) * vg.patches_w, 0);
  const std::vector<int32_t> idx =
      unshuffle_rows(vg.patches_h, vg.patches_w, static_cast<int32_t>(c.scale_factor));
  std::vector<float> out(static_cast<size_t>(vg.n_tokens) * c.n_embd_text);
  graph::Bindings bindings;
  bindings.bind_input(vg.patches, std::span<const float>(patches));
  bindings.bind_input(vg.pos_embd, std::span<const float>(pos));
  bindings.bind_input(vg.positions, std::span<const int32_t>(zeros));
  bindings.bind_input(vg.unshuffle, std::span<const int32_t>(idx));
  bind_vision_weights(vg, bindings);
  bindings.bind_output(vg.features, std::span<float>(out));
  GENIEX_TRY(graph::run_reference(vg.graph, bindings));
  return out;
}

}  // namespace geniex::models
