// RmsNorm (plain, with an F32 or F16 weight, chained; Gemma's widths), LayerNorm (SigLIP2's and
// the test models' widths, with and without weight / bias, rows with a large mean, the vision
// MLP's LayerNorm -> exact GELU) and RoPE (both pairings,
// partial rotation, frequency factors, large positions, Gemma's bases; chains of RoPEs that
// share one positions node across parameter sets and runs).
#include <string>

#include "conformance/problems.h"

namespace geniex::conformance {

ProblemList rms_norm_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  struct Shape {
    int64_t e, rows;
    float sigma;
  };
  std::vector<Shape> shapes;
  for (int64_t m : tg.tokens({13, 37})) shapes.push_back({tg.is_static() ? 64 : 75, m, 3.0f});
  for (const auto& s : shapes) {
    for (int weighted = t == kF16 ? 1 : 0; weighted < 2; ++weighted) {
      auto p = std::make_unique<Problem>();
      p->name = "[" + std::to_string(s.e) + ", " + std::to_string(s.rows) + "]" +
                (weighted != 0 ? " weight " + std::string(ggml_type_name(t)) : " no weight");
      if (tg.is_static()) p->tokens(s.rows);
      const NodeId x = p->input({s.e, s.rows, 1, 1}, s.sigma);
      OpParams prm;
      prm.eps = 1e-5f;
      p->out = weighted != 0 ? p->op(OpKind::kRmsNorm, {x, p->weight(t, s.e, 1, 1.0f)}, prm)
                             : p->op(OpKind::kRmsNorm, {x}, prm);
      out.push_back(std::move(p));
    }
  }
  if (tg.is_static()) return out;
  {  // a chain: norm with an F32 weight, then with this type's, plus a plain norm
    auto p = std::make_unique<Problem>();
    p->name = "chain [96, 13]";
    const NodeId x = p->input({96, 13, 1, 1}, 2.0f);
    OpParams prm;
    prm.eps = 1e-5f;
    const NodeId a = p->op(OpKind::kRmsNorm, {x, p->weight(kF32, 96, 1, 1.0f)}, prm);
    const NodeId c = p->op(OpKind::kRmsNorm, {a, p->weight(t, 96, 1, 1.0f)}, prm);
    p->out = p->op(OpKind::kAdd, {c, p->op(OpKind::kRmsNorm, {x}, prm)});
    out.push_back(std::move(p));
  }
  if (t == kF32) {  // Gemma 3 270M: the 640-wide norms and the q / k norms over head_dim 256
    for (auto ne :
         {std::array<int64_t, 4>{640, 256, 1, 1}, std::array<int64_t, 4>{256, 4, 256, 1}}) {
      auto p = std::make_unique<Problem>();
      p->name = "gemma [" + std::to_string(ne[0]) + ", ...]";
      p->variant = "gemma";
      p->heavy = true;
      const NodeId x = p->input(ne, 3.0f);
      OpParams prm;
      prm.eps = 1e-6f;
      p->out = p->op(OpKind::kRmsNorm, {x, p->weight(kF32, ne[0], 1, 1.0f)}, prm);
      out.push_back(std::move(p));
    }
  }
  return out;
}

ProblemList layer_norm_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  struct Shape {
    int64_t e, rows;
    bool heavy;
  };
  std::vector<Shape> shapes;
  if (tg.is_static()) {
    for (int64_t m : tg.tokens({})) shapes.push_back({64, m, false});
  } else {  // the tiny test models, an odd width, SigLIP2 base / so400m, the projector's input
    shapes = {{32, 13, false},  {128, 37, false}, {75, 5, false},
              {768, 29, false}, {1152, 9, true},  {3072, 6, true}};
  }
  for (const auto& s : shapes) {
    // F32: no weight, weight, weight and bias; F16: the weight and bias of this type.
    for (int mode = t == kF16 ? 1 : 0; mode < 3; ++mode) {
      auto p = std::make_unique<Problem>();
      const char* what[] = {" plain", " weight ", " weight+bias "};
      p->name = "[" + std::to_string(s.e) + ", " + std::to_string(s.rows) + "]" + what[mode] +
                (mode == 0 ? "" : std::string(ggml_type_name(t)));
      p->heavy = s.heavy;
      if (tg.is_static()) p->tokens(s.rows);
      const NodeId x = p->input({s.e, s.rows, 1, 1}, 3.0f);
      std::vector<NodeId> in = {x};
      if (mode >= 1) in.push_back(p->weight(t, s.e, 1, 1.0f, "w"));
      if (mode == 2) in.push_back(p->weight(t, s.e, 1, 0.5f, "b"));
      OpParams prm;
      prm.eps = 1e-6f;
      p->out = p->op(OpKind::kLayerNorm, in, prm);
      out.push_back(std::move(p));
    }
  }
  if (tg.is_static()) return out;
  {  // rows with a large mean of their own (x + a [1, T] offset): the variance pass must subtract
     // it; then the vision MLP's exact GELU on the normalized rows
    auto p = std::make_unique<Problem>();
    p->name = "offset rows [384, 11] -> GeluErf";
    const NodeId x = p->input({384, 11, 1, 1}, 0.5f);
    const NodeId shifted = p->op(OpKind::kAdd, {x, p->weight(kF32, 1, 11, 40.0f, "offset")});
    OpParams prm;
    prm.eps = 1e-5f;
    const NodeId n =
        p->op(OpKind::kLayerNorm,
              {shifted, p->weight(t, 384, 1, 1.0f, "w"), p->weight(t, 384, 1, 0.5f, "b")}, prm);
    p->out = p->op(OpKind::kGeluErf, {n});
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// Positions start + stride * i.
std::vector<int32_t> positions(int64_t n, int32_t start, int32_t stride) {
  std::vector<int32_t> v(sz(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + stride * static_cast<int32_t>(i);
  return v;
}

void add_rope(ProblemList& out, const Target& tg, int64_t d, int64_t nh, int64_t t,
              graph::RopeParams rp, std::vector<int32_t> pos, bool ff, std::string name,
              std::string variant = {}) {
  auto p = std::make_unique<Problem>();
  p->name = std::move(name);
  p->heavy = t >= 256;
  p->variant = std::move(variant);
  if (tg.is_static()) p->tokens(t);
  const NodeId x = p->input({d, nh, t, 1});
  std::vector<NodeId> in = {x, p->ints(std::move(pos), "pos")};
  if (ff) {
    const int64_t nd = rp.n_dims == 0 ? d : rp.n_dims;
    std::vector<float> f(sz(nd / 2));
    for (size_t i = 0; i < f.size(); ++i) f[i] = 1.0f + 0.37f * static_cast<float>(i);
    // A weight (constant): backends that build tables on the host read it there.
    const NodeId fn = p->g.add_weight(graph::make_desc(kF32, nd / 2), "freq_factors");
    p->f32.push_back(std::move(f));
    p->b.bind_weight(fn, kF32, bytes_of(p->f32.back()));
    in.push_back(fn);
  }
  OpParams prm;
  prm.rope = rp;
  p->out = p->op(OpKind::kRope, in, prm);
  out.push_back(std::move(p));
}

}  // namespace

ProblemList rope_problems(const Target& tg) {
  ProblemList out;
  for (auto mode : {graph::RopeMode::kNormal, graph::RopeMode::kNeox}) {
    const std::string m = mode == graph::RopeMode::kNeox ? "neox" : "normal";
    for (int32_t n_dims : {0, 32}) {
      for (bool ff : {false, true}) {
        for (int64_t t : tg.tokens({1, 19, 37})) {
          graph::RopeParams rp;
          rp.mode = mode;
          rp.n_dims = n_dims;
          rp.base = t == 19 ? 500000.0f : 10000.0f;
          rp.freq_scale = 0.5f;
          add_rope(out, tg, 64, 3, t, rp, positions(t, 5, t == 19 ? 3 : 1), ff,
                   m + " n_dims=" + std::to_string(n_dims) + (ff ? " ff" : "") +
                       " T=" + std::to_string(t));
        }
      }
    }
  }
  if (tg.is_static()) return out;
  {  // f32 angles vs the reference's doubles: the error grows with the position
    graph::RopeParams rp;
    rp.mode = graph::RopeMode::kNeox;
    rp.base = 1000000.0f;
    add_rope(out, tg, 128, 2, 37, rp, positions(37, 32000, 1), false, "neox positions 32000..");
  }
  for (float base : {10000.0f, 1000000.0f}) {  // Gemma 3 270M's two bases at prefill
    graph::RopeParams rp;
    rp.mode = graph::RopeMode::kNeox;
    rp.base = base;
    add_rope(out, tg, 256, 4, 256, rp, positions(256, 0, 1), false,
             "gemma neox base " + std::to_string(static_cast<int>(base)), "gemma");
  }
  {  // six layers' RoPEs on one positions node, two bases and two n_dims; three runs with new
     // positions (per-run cos / sin tables must not be reused across runs)
    auto p = std::make_unique<Problem>();
    p->name = "chain of 6 sharing positions, 3 runs";
    p->variant = "shared tables";
    const int64_t d = 64, nh = 2, t = 11;
    const NodeId x = p->input({d, nh, t, 1});
    const NodeId pn = p->ints(positions(t, 0, 1), "pos");
    NodeId y = x;
    for (int layer = 0; layer < 6; ++layer) {
      OpParams prm;
      prm.rope.mode = graph::RopeMode::kNeox;
      prm.rope.base = layer % 2 == 0 ? 10000.0f : 1000000.0f;
      prm.rope.n_dims = layer % 3 == 2 ? 32 : 0;
      y = p->op(OpKind::kRope, {y, pn}, prm);
    }
    p->out = y;
    p->extra_runs = 2;
    p->before_run = [](Problem& pr, int run) {
      auto& pos = pr.i32.back();
      for (size_t i = 0; i < pos.size(); ++i) pos[i] = 100 * run + 7 * static_cast<int32_t>(i);
    };
    out.push_back(std::move(p));
  }
  {  // two frequency-factor nodes with the same positions and parameters, and none
    auto p = std::make_unique<Problem>();
    p->name = "two frequency-factor nodes";
    p->variant = "shared tables";
    const int64_t d = 32, nh = 2, t = 7;
    const NodeId x = p->input({d, nh, t, 1});
    const NodeId pn = p->ints(positions(t, 3, 2), "pos");
    std::vector<float> fa(sz(d / 2)), fb(sz(d / 2));
    for (size_t i = 0; i < fa.size(); ++i) {
      fa[i] = 1.0f + 0.25f * static_cast<float>(i);
      fb[i] = 8.0f - 0.25f * static_cast<float>(i);
    }
    const NodeId na = p->values({d / 2, 1, 1, 1}, fa, "ff_a");
    const NodeId nb = p->values({d / 2, 1, 1, 1}, fb, "ff_b");
    NodeId y = x;
    for (NodeId f : {na, nb, na, nb}) y = p->op(OpKind::kRope, {y, pn, f});
    p->out = p->op(OpKind::kRope, {y, pn});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace geniex::conformance
