// Element-wise problems: the unary ops (large tensors that span several of the CPU's parallel
// chunks; odd 4-D shapes), GLU with both activations, Add / Mul with every broadcast pattern and
// an F16 bias, Reshape (of an op, of an F16 weight, as the bound output) and GetRows.
#include <string>

#include "conformance/problems.h"

namespace geniex::conformance {
namespace {

std::string ne_str(std::array<int64_t, 4> ne) {
  return "[" + std::to_string(ne[0]) + "," + std::to_string(ne[1]) + "," + std::to_string(ne[2]) +
         "," + std::to_string(ne[3]) + "]";
}

float scale_for(OpKind kind, bool cpu_shape) {
  if (kind == OpKind::kSoftcap) return cpu_shape ? 30.0f : 2.5f;
  if (kind == OpKind::kScale) return cpu_shape ? 0.125f : 0.37f;
  if (kind == OpKind::kSoftmax) return cpu_shape ? 0.125f : 0.7f;
  return 1.0f;
}

}  // namespace

ProblemList unary_problems(OpKind kind, const Target& tg) {
  ProblemList out;
  struct Shape {
    std::array<int64_t, 4> ne;
    float sigma;
    bool cpu_shape;
  };
  std::vector<Shape> shapes;
  if (tg.is_static()) {
    for (int64_t t : tg.tokens({})) shapes.push_back({{64, t, 1, 1}, 1.0f, false});
  } else {
    shapes = {{{500, 100, 1, 1}, 30.0f, true}, {{77, 5, 3, 1}, 2.0f, false}};
  }
  for (const auto& s : shapes) {
    auto p = std::make_unique<Problem>();
    p->name = ne_str(s.ne) + " sigma " + std::to_string(static_cast<int>(s.sigma));
    p->seed = 71;
    if (tg.is_static()) p->tokens(s.ne[1]);
    const NodeId x = p->input(s.ne, s.sigma);
    OpParams prm;
    prm.scale = tg.is_static() ? 0.7f : scale_for(kind, s.cpu_shape);
    p->out = p->op(kind, {x}, prm);
    if (kind == OpKind::kGelu) p->gelu_x = &p->f32.back();
    out.push_back(std::move(p));
  }
  return out;
}

ProblemList glu_problems(const Target& tg) {
  ProblemList out;
  std::vector<std::array<int64_t, 4>> shapes;
  for (int64_t t : tg.tokens({37})) shapes.push_back({tg.is_static() ? 64 : 77, t, 1, 1});
  if (!tg.is_static()) shapes.push_back({200, 200, 1, 1});  // several element-wise chunks
  for (const auto& ne : shapes) {
    for (auto act : {graph::GluActivation::kSilu, graph::GluActivation::kGeluTanh}) {
      auto p = std::make_unique<Problem>();
      const bool gelu = act == graph::GluActivation::kGeluTanh;
      p->name = std::string(gelu ? "geglu " : "swiglu ") + ne_str(ne);
      p->variant = gelu ? "gelu" : "";
      p->seed = 51;
      if (tg.is_static()) p->tokens(ne[1]);
      const NodeId gate = p->input(ne, 2.0f, "gate");
      const auto* gate_v = &p->f32.back();
      const NodeId up = p->input(ne, 1.0f, "up");
      OpParams prm;
      prm.glu = act;
      p->out = p->op(OpKind::kGlu, {gate, up}, prm);
      if (gelu) {
        p->gelu_x = gate_v;
        p->gelu_up = &p->f32.back();
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

ProblemList binary_problems(OpKind kind, GgmlType t, const Target& tg) {
  ProblemList out;
  if (t == kF16) {  // a bias stored as F16 (a weight, read as F32)
    for (int64_t m : tg.tokens({5})) {
      auto p = std::make_unique<Problem>();
      p->name = "F16 bias [64] over [64, " + std::to_string(m) + "]";
      if (tg.is_static()) p->tokens(m);
      const NodeId a = p->input({64, m, 1, 1});
      p->out = p->op(kind, {a, p->weight(kF16, 64)});
      out.push_back(std::move(p));
    }
    return out;
  }
  struct Pair {
    std::array<int64_t, 4> a, b;
  };
  std::vector<Pair> pairs;
  if (tg.is_static()) {
    for (int64_t m : tg.tokens({})) {
      pairs.push_back({{64, m, 1, 1}, {64, 1, 1, 1}});
      pairs.push_back({{64, m, 1, 1}, {64, m, 1, 1}});
    }
  } else {
    for (std::array<int64_t, 4> b : {std::array<int64_t, 4>{16, 5, 3, 2},
                                     {16, 1, 1, 1},
                                     {1, 5, 1, 1},
                                     {16, 5, 1, 2},
                                     {1, 1, 3, 1},
                                     {1, 1, 1, 1}}) {
      pairs.push_back({{16, 5, 3, 2}, b});
    }
    for (std::array<int64_t, 4> b :
         {std::array<int64_t, 4>{13, 7, 3, 2}, {13, 1, 1, 1}, {1, 7, 1, 2}, {13, 7, 1, 1}}) {
      pairs.push_back({{13, 7, 3, 2}, b});
    }
  }
  for (const auto& pr : pairs) {
    auto p = std::make_unique<Problem>();
    p->name = "a=" + ne_str(pr.a) + " b=" + ne_str(pr.b);
    p->seed = 61;
    if (tg.is_static()) p->tokens(pr.a[1]);
    const NodeId a = p->input(pr.a, 1.0f, "a");
    const NodeId b = p->input(pr.b, 1.0f, "b");
    p->out = p->op(kind, {a, b});
    out.push_back(std::move(p));
  }
  return out;
}

ProblemList reshape_problems(GgmlType t, const Target& tg) {
  ProblemList out;
  for (int64_t m : tg.tokens({6})) {
    auto p = std::make_unique<Problem>();
    const int64_t e = 24;
    if (tg.is_static()) p->tokens(m);
    OpParams flat, back;
    flat.ne = {e * m, 1, 1, 1};
    back.ne = {e, m, 1, 1};
    if (t == kF16) {  // a reshape of an F16 weight, multiplied into an activation
      p->name = "F16 weight [" + std::to_string(e * m) + "] as [24, " + std::to_string(m) + "]";
      const NodeId x = p->input({e, m, 1, 1});
      const NodeId w = p->weight(kF16, e * m);
      p->out = p->op(OpKind::kMul, {x, p->op(OpKind::kReshape, {w}, back)});
    } else {  // silu -> flatten -> scale -> back -> [12, 2, m] as the bound output
      p->name = "chain of reshapes, T=" + std::to_string(m);
      const NodeId x = p->input({e, m, 1, 1});
      OpParams sc, view;
      sc.scale = 2.0f;
      view.ne = {e / 2, 2, m, 1};
      const NodeId s = p->op(OpKind::kScale, {p->op(OpKind::kReshape, {x}, flat)}, sc);
      p->out = p->op(OpKind::kReshape, {p->op(OpKind::kReshape, {s}, back)}, view);
    }
    out.push_back(std::move(p));
  }
  return out;
}

ProblemList get_rows_problems(const Target& tg) {
  ProblemList out;
  for (int64_t m : tg.tokens({6, 10})) {
    auto p = std::make_unique<Problem>();
    const int64_t e = tg.is_static() ? 64 : m == 6 ? 24 : 12;
    p->name = "[" + std::to_string(e) + ", " + std::to_string(m) + "] rows last, first, repeated";
    if (tg.is_static()) p->tokens(m);
    const NodeId x = p->input({e, m, 1, 1});
    const int32_t last = static_cast<int32_t>(m - 1);
    p->out = p->op(OpKind::kGetRows, {x, p->ints({last, 0, last, 2 % static_cast<int32_t>(m)})});
    out.push_back(std::move(p));
  }
  return out;
}

ProblemList hadamard_problems(const Target& tg) {
  ProblemList out;
  struct Case {
    std::array<int64_t, 4> ne;
    int32_t n;
  };
  std::vector<Case> cases;
  if (tg.is_static()) {
    for (int64_t t : tg.tokens({})) cases.push_back({{64, 2, t, 1}, 64});
  } else {
    // Gemma's K (256-wide heads, 4 heads, a prefill spanning several parallel tasks), Llama's V
    // (64-wide blocks of 128-wide heads), one decode row and the smallest block.
    cases = {
        {{256, 4, 37, 1}, 256}, {{128, 8, 5, 1}, 64}, {{512, 1, 1, 1}, 128}, {{6, 3, 1, 1}, 2}};
  }
  for (const auto& c : cases) {
    auto p = std::make_unique<Problem>();
    p->name = "n " + std::to_string(c.n) + " over " + ne_str(c.ne);
    p->seed = 83;
    if (tg.is_static()) p->tokens(c.ne[2]);
    const NodeId x = p->input(c.ne, 3.0f);
    OpParams prm;
    prm.hadamard_n = c.n;
    p->out = p->op(OpKind::kHadamard, {x}, prm);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace geniex::conformance

namespace geniex::conformance {

// LFM2's short conv: one fresh sequence (no state), a prefill shorter than the state, decode
// rows of three sequences, two interleaved sequences with a padding token, three interleaved
// with L 8 (a slot's history spans its state and tokens far apart); the state problems
// advance the same states.
ProblemList short_conv_problems(OpKind kind, const Target& tg) {
  ProblemList out;
  struct Case {
    int64_t e, t, l, slots;  // slots 0: no state input (kShortConv only)
    std::vector<int32_t> seq;
    std::string what;
  };
  std::vector<Case> cases;
  if (tg.is_static()) {
    for (int64_t t : tg.tokens({}))
      cases.push_back({64, t, 3, 1, std::vector<int32_t>(sz(t), 0), "one sequence"});
  } else {
    cases = {{24, 9, 3, 0, {}, "fresh"},
             {16, 1, 3, 1, {0}, "decode"},
             {16, 1, 4, 1, {0}, "one token, L 4"},
             {32, 3, 3, 3, {2, 0, 1}, "three decodes"},
             {20, 7, 3, 2, {1, 1, 0, 1, -1, 0, 0}, "two sequences + padding"},
             {64, 37, 3, 2, std::vector<int32_t>(37, 1), "prefill of slot 1"},
             {40, 11, 8, 3, {2, 0, 2, 1, 2, -1, 2, 0, 2, 2, 1}, "interleaved, L 8"}};
  }
  for (const auto& c : cases) {
    if (kind == OpKind::kShortConvState && c.slots == 0) continue;
    auto p = std::make_unique<Problem>();
    p->name = c.what + " E " + std::to_string(c.e) + " T " + std::to_string(c.t) + " L " +
              std::to_string(c.l);
    p->seed = 97;
    if (tg.is_static()) p->tokens(c.t);
    const NodeId u = p->input({c.e, c.t, 1, 1}, 2.0f, "u");
    std::vector<NodeId> in = {u};
    if (kind == OpKind::kShortConv) in.push_back(p->weight(kF32, c.l, c.e, 0.5f, "w"));
    if (c.slots > 0) {
      in.push_back(p->input({c.e, c.l - 1, c.slots, 1}, 2.0f, "state"));
      in.push_back(p->ints(c.seq, "seq"));
    }
    p->out = p->op(kind, in);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace geniex::conformance
