// run_reference over small graphs, matched against direct per-op calls.
#include "graph/run_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "graph/ref_ops.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace geniex::graph {
namespace {

using quant::testing::gaussian;

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kI32 = GgmlType::kI32;

std::vector<uint8_t> quantize(GgmlType t, const std::vector<float>& f, size_t k) {
  const size_t row = *ggml_row_bytes(t, k);
  std::vector<uint8_t> out(row * (f.size() / k));
  for (size_t r = 0; r < f.size() / k; ++r) {
    EXPECT_TRUE(
        quant::quantize_row(t, std::span(f).subspan(r * k, k), std::span(out).subspan(r * row, row))
            .ok());
  }
  return out;
}

std::span<const uint8_t> bytes(const std::vector<float>& f) {
  return {reinterpret_cast<const uint8_t*>(f.data()), f.size() * sizeof(float)};
}

TEST(RunReference, EmbeddingNormMatMulMatchesPerOpCalls) {
  const int64_t e = 64, vocab = 10, n_out = 12;
  const auto table_f = gaussian(size_t(e * vocab), 1.0f, 1);
  const auto table = quantize(GgmlType::kQ8_0, table_f, size_t(e));
  const auto norm_w = gaussian(size_t(e), 1.0f, 2);
  const auto wq_f = gaussian(size_t(e * n_out), 0.1f, 3);
  const auto wq = quantize(GgmlType::kQ4_0, wq_f, size_t(e));
  const std::vector<int32_t> ids = {3, 9, 0};

  Graph g;
  NodeId tok = g.add_weight(make_desc(GgmlType::kQ8_0, e, vocab), "token_embd.weight");
  NodeId nw = g.add_weight(make_desc(kF32, e), "attn_norm.weight");
  NodeId w = g.add_weight(make_desc(GgmlType::kQ4_0, e, n_out), "attn_q.weight");
  NodeId in = g.add_input(make_desc(kI32, 3), "ids");
  auto x = g.add_op(OpKind::kEmbedding, {tok, in});
  ASSERT_TRUE(x.ok());
  OpParams np;
  np.eps = 1e-5f;
  auto h = g.add_op(OpKind::kRmsNorm, {*x, nw}, np, "norm");
  ASSERT_TRUE(h.ok());
  auto y = g.add_op(OpKind::kMatMul, {w, *h}, {}, "q");
  ASSERT_TRUE(y.ok());

  std::vector<float> got_h(size_t(e * 3)), got_y(size_t(n_out * 3));
  Bindings b;
  b.bind_weight(tok, GgmlType::kQ8_0, table);
  b.bind_weight(nw, kF32, bytes(norm_w));
  b.bind_weight(w, GgmlType::kQ4_0, wq);
  b.bind_input(in, std::span<const int32_t>(ids));
  b.bind_output(*h, got_h);
  b.bind_output(*y, got_y);
  ASSERT_TRUE(run_reference(g, b).ok());

  std::vector<float> ex(size_t(e * 3)), eh(ex.size()), ey(got_y.size());
  ASSERT_TRUE(ref::embedding(GgmlType::kQ8_0, table, e, vocab, ids, ex).ok());
  ASSERT_TRUE(ref::rms_norm(ex, norm_w, e, 1e-5f, eh).ok());
  ASSERT_TRUE(ref::matmul(GgmlType::kQ4_0, wq, e, n_out, eh, 3, ey).ok());
  EXPECT_EQ(got_h, eh);
  EXPECT_EQ(got_y, ey);
}

TEST(RunReference, AttentionBlockThroughReshapeAndRope) {
  // q/k/v projections -> reshape to heads -> neox rope -> GQA attention -> reshape -> add.
  const int64_t d = 8, nh = 4, nkv = 2, t = 3, emb = 32;
  const auto xf = gaussian(size_t(emb * t), 1.0f, 4);
  const auto wqf = gaussian(size_t(emb * d * nh), 0.2f, 5);
  const auto wkf = gaussian(size_t(emb * d * nkv), 0.2f, 6);
  const auto wvf = gaussian(size_t(emb * d * nkv), 0.2f, 7);
  const std::vector<int32_t> pos = {4, 5, 6};
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, emb, t), "x");
  NodeId p = g.add_input(make_desc(kI32, t), "pos");
  NodeId wq = g.add_weight(make_desc(kF32, emb, d * nh), "wq");
  NodeId wk = g.add_weight(make_desc(kF32, emb, d * nkv), "wk");
  NodeId wv = g.add_weight(make_desc(kF32, emb, d * nkv), "wv");
  auto q = g.add_op(OpKind::kMatMul, {wq, x});
  auto k = g.add_op(OpKind::kMatMul, {wk, x});
  auto v = g.add_op(OpKind::kMatMul, {wv, x});
  ASSERT_TRUE(q.ok() && k.ok() && v.ok());
  OpParams rq, rk;
  rq.ne = {d, nh, t, 1};
  rk.ne = {d, nkv, t, 1};
  auto q3 = g.add_op(OpKind::kReshape, {*q}, rq);
  auto k3 = g.add_op(OpKind::kReshape, {*k}, rk);
  auto v3 = g.add_op(OpKind::kReshape, {*v}, rk);
  ASSERT_TRUE(q3.ok() && k3.ok() && v3.ok());
  OpParams rope;
  rope.rope.mode = RopeMode::kNeox;
  rope.rope.base = 1e6f;
  auto qr = g.add_op(OpKind::kRope, {*q3, p}, rope);
  auto kr = g.add_op(OpKind::kRope, {*k3, p}, rope);
  ASSERT_TRUE(qr.ok() && kr.ok());
  OpParams ap;
  ap.attn.scale = 1.0f / std::sqrt(float(d));
  auto a = g.add_op(OpKind::kAttention, {*qr, *kr, *v3, p, p}, ap);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  OpParams flat;
  flat.ne = {d * nh, t, 1, 1};
  auto af = g.add_op(OpKind::kReshape, {*a}, flat);
  ASSERT_TRUE(af.ok());
  std::vector<float> out(size_t(d * nh * t));
  Bindings b;
  b.bind_input(x, std::span<const float>(xf));
  b.bind_input(p, std::span<const int32_t>(pos));
  b.bind_weight(wq, kF32, bytes(wqf));
  b.bind_weight(wk, kF32, bytes(wkf));
  b.bind_weight(wv, kF32, bytes(wvf));
  b.bind_output(*af, out);
  ASSERT_TRUE(run_reference(g, b).ok());

  std::vector<float> eq(size_t(d * nh * t)), ek(size_t(d * nkv * t)), ev(ek.size());
  ASSERT_TRUE(ref::matmul(kF32, bytes(wqf), emb, d * nh, xf, t, eq).ok());
  ASSERT_TRUE(ref::matmul(kF32, bytes(wkf), emb, d * nkv, xf, t, ek).ok());
  ASSERT_TRUE(ref::matmul(kF32, bytes(wvf), emb, d * nkv, xf, t, ev).ok());
  std::vector<float> eqr(eq.size()), ekr(ek.size()), ea(eq.size());
  ASSERT_TRUE(ref::rope(eq, d, nh, t, pos, rope.rope, {}, eqr).ok());
  ASSERT_TRUE(ref::rope(ek, d, nkv, t, pos, rope.rope, {}, ekr).ok());
  ASSERT_TRUE(ref::attention(eqr, ekr, ev, {d, d, nh, nkv, t, t}, pos, pos, ap.attn, ea).ok());
  EXPECT_EQ(out, ea);
}

TEST(RunReference, FfnGluAddAndF16NormWeight) {
  const int64_t e = 32, t = 2;
  const auto xf = gaussian(size_t(e * t), 1.0f, 11);
  const auto wf = gaussian(size_t(e), 1.0f, 12);
  std::vector<uint8_t> w16(size_t(e) * 2);
  ASSERT_TRUE(quant::quantize_row(GgmlType::kF16, wf, w16).ok());
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, e, t), "x");
  NodeId w = g.add_weight(make_desc(GgmlType::kF16, e), "norm16");
  auto n = g.add_op(OpKind::kRmsNorm, {x, w});
  ASSERT_TRUE(n.ok());
  OpParams gp;
  gp.glu = GluActivation::kGeluTanh;
  auto gl = g.add_op(OpKind::kGlu, {*n, x}, gp);
  ASSERT_TRUE(gl.ok());
  auto s = g.add_op(OpKind::kAdd, {*gl, x});
  ASSERT_TRUE(s.ok());
  std::vector<float> out(size_t(e * t));
  Bindings b;
  b.bind_input(x, std::span<const float>(xf));
  b.bind_weight(w, GgmlType::kF16, w16);
  b.bind_output(*s, out);
  ASSERT_TRUE(run_reference(g, b).ok());
  std::vector<float> wd(static_cast<size_t>(e)), en(xf.size()), eg(xf.size()), es(xf.size());
  ASSERT_TRUE(quant::dequantize_row(GgmlType::kF16, w16, wd).ok());
  ASSERT_TRUE(ref::rms_norm(xf, wd, e, 1e-6f, en).ok());
  ASSERT_TRUE(ref::glu(GluActivation::kGeluTanh, en, xf, eg).ok());
  ASSERT_TRUE(ref::binary(OpKind::kAdd, eg, {e, t, 1, 1}, xf, {e, t, 1, 1}, es).ok());
  EXPECT_EQ(out, es);
}

TEST(RunReference, BindingErrorsNameTheNode) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 32, 2), "x");
  NodeId w = g.add_weight(make_desc(GgmlType::kQ8_0, 32, 4), "wq");
  auto y = g.add_op(OpKind::kMatMul, {w, x});
  ASSERT_TRUE(y.ok());
  std::vector<float> xf(64), out(8);
  std::vector<uint8_t> wb(4 * 34);
  Bindings b;
  b.bind_input(x, std::span<const float>(xf));
  b.bind_output(*y, out);
  Status s = run_reference(g, b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'wq'"), std::string::npos) << s.message();
  b.bind_weight(w, GgmlType::kQ4_0, wb);
  s = run_reference(g, b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Q4_0"), std::string::npos) << s.message();
  b.bind_weight(w, GgmlType::kQ8_0, std::span(wb).first(100));
  EXPECT_FALSE(run_reference(g, b).ok());
  b.bind_weight(w, GgmlType::kQ8_0, wb);
  EXPECT_TRUE(run_reference(g, b).ok());
  std::vector<float> small(7);
  b.bind_output(*y, small);
  EXPECT_FALSE(run_reference(g, b).ok());
}

// A SigLIP2 MLP-style chain: LayerNorm with F16 weight and bias (dequantized by the reference),
// then exact GELU, matched against direct per-op calls.
TEST(RunReference, LayerNormWithF16WeightThenGeluErf) {
  const int64_t e = 32, t = 3;
  const auto x = gaussian(size_t(e * t), 2.0f, 21);
  const auto wf = gaussian(size_t(e), 1.0f, 22);
  const auto bf = gaussian(size_t(e), 0.5f, 23);
  const auto w16 = quantize(GgmlType::kF16, wf, size_t(e));
  const auto b16 = quantize(GgmlType::kF16, bf, size_t(e));
  Graph g;
  NodeId in = g.add_input(make_desc(kF32, e, t), "x");
  NodeId w = g.add_weight(make_desc(GgmlType::kF16, e), "ln.weight");
  NodeId b = g.add_weight(make_desc(GgmlType::kF16, e), "ln.bias");
  OpParams p;
  p.eps = 1e-6f;
  auto h = g.add_op(OpKind::kLayerNorm, {in, w, b}, p, "ln");
  ASSERT_TRUE(h.ok());
  auto y = g.add_op(OpKind::kGeluErf, {*h}, {}, "gelu");
  ASSERT_TRUE(y.ok());
  std::vector<float> got_h(x.size()), got_y(x.size());
  Bindings bb;
  bb.bind_input(in, std::span<const float>(x));
  bb.bind_weight(w, GgmlType::kF16, w16);
  bb.bind_weight(b, GgmlType::kF16, b16);
  bb.bind_output(*h, got_h);
  bb.bind_output(*y, got_y);
  ASSERT_TRUE(run_reference(g, bb).ok());
  std::vector<float> wd(static_cast<size_t>(e)), bd(wd.size()), eh(x.size()), ey(x.size());
  ASSERT_TRUE(quant::dequantize_row(GgmlType::kF16, w16, wd).ok());
  ASSERT_TRUE(quant::dequantize_row(GgmlType::kF16, b16, bd).ok());
  ASSERT_TRUE(ref::layer_norm(x, wd, bd, e, 1e-6f, eh).ok());
  ASSERT_TRUE(ref::unary(OpKind::kGeluErf, eh, 1.0f, ey).ok());
  EXPECT_EQ(got_h, eh);
  EXPECT_EQ(got_y, ey);
}

}  // namespace
}  // namespace geniex::graph
