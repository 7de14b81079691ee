// Every op x dtype of the OpenCL backend against graph::run_reference on random data with odd
// shapes. Bounds (NMSE = sum (cl - ref)^2 / sum ref^2), measured values printed as "[ nmse ]":
// * f32 paths (element-wise, norms, softmax, rope, F32 matmul / attention): 1e-5; measured 0
//   for norms / softmax / rope / activations on a device with cl_khr_fp64 (PoCL), ~1e-13 else;
// * embeddings: 0 (the kernels dequantize with the reference's operation order, bit-identical);
// * matmul with F16 / BF16 weights: 1e-5 (the reference rounds the activations to F16 / BF16,
//   the kernels keep them f32), measured ~4e-8 / ~3e-6;
// * matmul with block weights: 1e-12 — the kernels quantize the activation rows to Q8_0 / Q8_K
//   and combine integer block sums as the reference does; only the order of the per-block float
//   terms differs (work-group tree): measured ~7e-15 (0 for K-quants at K=512, two terms);
// * attention over an F16 cache: 1e-5 (the kernel follows the CPU backend / llama.cpp: q and p
//   rounded to f16, where the reference keeps double), measured ~8e-8;
// * attention over Q8_0 / Q4_0 caches: 1e-12 (q quantized to Q8_0 and block dots as the
//   reference; the online softmax order differs), measured ~1e-14;
// * CacheWrite: the host state bytes equal the reference's (F32 copy, F16 round-to-nearest-even,
//   Q8_0 / Q4_0 through quant::quantize_row on the host).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>

#include "backends/opencl/opencl_test_util.h"

namespace geniex::backends::opencl_test {
namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr double kF32Bound = 1e-5;
constexpr double kHalfBound = 1e-5;
constexpr double kBlockBound = 1e-12;

OpParams scale_params(float scale) {
  OpParams p;
  p.scale = scale;
  return p;
}
OpParams reshape_params(std::array<int64_t, 4> ne) {
  OpParams p;
  p.ne = ne;
  return p;
}
OpParams attn_params(const graph::AttentionParams& a) {
  OpParams p;
  p.attn = a;
  return p;
}

class OpenclMatMul : public ::testing::TestWithParam<GgmlType> {};

TEST_P(OpenclMatMul, MatchesReference) {
  const GgmlType t = GetParam();
  const bool k_quant = t == GgmlType::kQ4_K || t == GgmlType::kQ5_K || t == GgmlType::kQ6_K;
  const bool block = t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16;
  // K not a multiple of 256 where the format allows; odd K for F32 / F16.
  const int64_t k = k_quant ? 512 : block ? 352 : 75;
  for (int64_t m : {1, 37}) {
    Case c;
    const NodeId w = c.weight(t, k, 45);
    const NodeId x = c.input({k, m, 1, 1});
    const NodeId y = c.op(OpKind::kMatMul, {w, x});
    const double bound = t == GgmlType::kF32 ? kF32Bound : block ? kBlockBound : kHalfBound;
    EXPECT_LE(compare(c, y, "matmul " + std::string(ggml_type_name(t)) + " M=" + std::to_string(m)),
              bound);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, OpenclMatMul,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ4_0,
                                           GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_K,
                                           GgmlType::kQ6_K, GgmlType::kQ5_K, GgmlType::kBF16,
                                           GgmlType::kIQ4_NL),
                         [](const auto& i) { return std::string(ggml_type_name(i.param)); });

// Activation rows that exercise the quantizers' corner cases, over several work-group passes
// (K = 4096: 128 blocks / 16 super-blocks): an all-zero row; a row whose largest |x| comes first
// with a negative sign and again later positive (Q8_K takes the first); halves that round away
// from zero (Q8_0: d = 1 exactly) but to even (Q8_K); large and tiny magnitudes. A different
// rounding of even one quant moves the NMSE far above the bound.
class OpenclMatMulBlocks : public ::testing::TestWithParam<GgmlType> {};

TEST_P(OpenclMatMulBlocks, QuantizedActivationsFollowTheReference) {
  const GgmlType t = GetParam();
  constexpr int64_t k = 4096, m = 6;
  Case c;
  const NodeId w = c.weight(t, k, 9);
  const NodeId x = c.input({k, m, 1, 1});
  std::vector<float>& v = c.f32.back();
  for (int64_t j = 0; j < k; ++j) {
    const size_t i = sz(j);
    v[i] = 0.0f;                                                                   // row 0: zeros
    v[sz(k) + i] = (j % 32 == 3) ? -3.0f : (j % 32 == 9) ? 3.0f : v[sz(k) + i];    // row 1: ties
    v[sz(2 * k) + i] = (j % 32 == 0) ? 127.0f : static_cast<float>(j % 7) - 2.5f;  // row 2: halves
    v[sz(3 * k) + i] *= 1e4f;                                                      // row 3: large
    v[sz(4 * k) + i] *= 1e-6f;                                                     // row 4: small
  }
  const NodeId y = c.op(OpKind::kMatMul, {w, x});
  EXPECT_LE(compare(c, y, "matmul " + std::string(ggml_type_name(t)) + " edge rows"), kBlockBound);
}

INSTANTIATE_TEST_SUITE_P(Types, OpenclMatMulBlocks,
                         ::testing::Values(GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0,
                                           GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ5_K,
                                           GgmlType::kIQ4_NL),
                         [](const auto& i) { return std::string(ggml_type_name(i.param)); });

class OpenclEmbedding : public ::testing::TestWithParam<GgmlType> {};

TEST_P(OpenclEmbedding, IsBitIdentical) {
  const GgmlType t = GetParam();
  const bool k_quant = t == GgmlType::kQ4_K || t == GgmlType::kQ5_K || t == GgmlType::kQ6_K;
  const bool elems = t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
  const int64_t e = k_quant ? 256 : elems ? 37 : 96;
  Case c;
  const NodeId table = c.weight(t, e, 50);
  const NodeId ids = c.ints({3, 0, 49, 7, 7, 21, 3});
  const NodeId y = c.op(OpKind::kEmbedding, {table, ids});
  EXPECT_EQ(compare(c, y, "embedding " + std::string(ggml_type_name(t))), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Types, OpenclEmbedding,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ4_0,
                                           GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_K,
                                           GgmlType::kQ6_K, GgmlType::kQ5_K, GgmlType::kBF16,
                                           GgmlType::kIQ4_NL),
                         [](const auto& i) { return std::string(ggml_type_name(i.param)); });

TEST(OpenclOps, EmbeddingIdOutOfRangeIsAnErrorNamingTheNode) {
  Case c;
  const NodeId table = c.weight(GgmlType::kQ8_0, 64, 10);
  const NodeId ids = c.ints({1, 10});
  const NodeId y = c.op(OpKind::kEmbedding, {table, ids});
  std::vector<float> out(128);
  c.b.bind_output(y, out);
  const Status s = shared_backend().run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("node " + std::to_string(y)), std::string::npos) << s.message();
}

TEST(OpenclOps, RmsNorm) {
  for (GgmlType wt : {GgmlType::kF32, GgmlType::kF16}) {
    for (bool with_w : {false, true}) {
      Case c;
      const NodeId x = c.input({75, 37, 1, 1}, 3.0f);
      OpParams p;
      p.eps = 1e-5f;
      const NodeId y = with_w ? c.op(OpKind::kRmsNorm, {x, c.weight(wt, 75)}, p)
                              : c.op(OpKind::kRmsNorm, {x}, p);
      EXPECT_LE(
          compare(c, y,
                  std::string("rms_norm w=") + (with_w ? std::string(ggml_type_name(wt)) : "none")),
          kF32Bound);
    }
  }
}

TEST(OpenclOps, Rope) {
  for (auto mode : {graph::RopeMode::kNormal, graph::RopeMode::kNeox}) {
    for (int64_t t : {1, 37}) {
      for (bool ff : {false, true}) {
        Case c;
        const int64_t d = 64, n_dims = ff ? 48 : 0;  // with factors: n_dims < head dim
        const NodeId x = c.input({d, 3, t, 1});
        std::vector<int32_t> pos(sz(t));
        std::iota(pos.begin(), pos.end(), 5);
        const NodeId p_id = c.ints(pos, "pos");
        OpParams p;
        p.rope.mode = mode;
        p.rope.n_dims = static_cast<int32_t>(n_dims);
        p.rope.base = 10000.0f;
        p.rope.freq_scale = 0.5f;
        std::vector<NodeId> in = {x, p_id};
        if (ff) {
          Case& cc = c;
          const NodeId f = cc.g.add_weight(graph::make_desc(GgmlType::kF32, 24), "ff");
          cc.f32.push_back(std::vector<float>(24));
          for (size_t i = 0; i < 24; ++i) cc.f32.back()[i] = 1.0f + 0.25f * static_cast<float>(i);
          const auto& fv = cc.f32.back();
          cc.b.bind_weight(f, GgmlType::kF32,
                           {reinterpret_cast<const uint8_t*>(fv.data()), fv.size() * 4});
          in.push_back(f);
        }
        const NodeId y = c.op(OpKind::kRope, in, p);
        EXPECT_LE(
            compare(c, y,
                    std::string("rope ") + (mode == graph::RopeMode::kNeox ? "neox" : "norm") +
                        " T=" + std::to_string(t) + (ff ? " ff n_dims=48" : "")),
            kF32Bound);
      }
    }
  }
}

// Angles are f32 in the kernel (double in the reference): the error grows with the position.
TEST(OpenclOps, RopeAtLargePositions) {
  Case c;
  const NodeId x = c.input({128, 2, 37, 1});
  std::vector<int32_t> pos(37);
  std::iota(pos.begin(), pos.end(), 32000);
  OpParams p;
  p.rope.mode = graph::RopeMode::kNeox;
  p.rope.base = 1000000.0f;
  const NodeId y = c.op(OpKind::kRope, {x, c.ints(pos, "pos")}, p);
  EXPECT_LE(compare(c, y, "rope neox positions 32000..32036"), kF32Bound);
}

TEST(OpenclOps, ElementWise) {
  struct U {
    OpKind k;
    float scale;
  };
  for (U u : {U{OpKind::kGelu, 1.0f}, U{OpKind::kSilu, 1.0f}, U{OpKind::kScale, 0.37f},
              U{OpKind::kSoftcap, 2.5f}, U{OpKind::kSoftmax, 0.7f}}) {
    Case c;
    const NodeId x = c.input({77, 5, 3, 1}, 2.0f);
    OpParams p;
    p.scale = u.scale;
    const NodeId y = c.op(u.k, {x}, p);
    EXPECT_LE(compare(c, y, std::string(graph::op_name(u.k))), kF32Bound);
  }
  for (auto act : {graph::GluActivation::kSilu, graph::GluActivation::kGeluTanh}) {
    Case c;
    const NodeId gate = c.input({77, 37, 1, 1});
    const NodeId up = c.input({77, 37, 1, 1});
    OpParams p;
    p.glu = act;
    const NodeId y = c.op(OpKind::kGlu, {gate, up}, p);
    EXPECT_LE(compare(c, y, act == graph::GluActivation::kSilu ? "glu silu" : "glu gelu"),
              kF32Bound);
  }
}

TEST(OpenclOps, AddMulBroadcastReshapeGetRows) {
  const std::array<int64_t, 4> a_ne = {13, 7, 3, 2};
  for (OpKind k : {OpKind::kAdd, OpKind::kMul}) {
    for (std::array<int64_t, 4> b_ne :
         {a_ne, std::array<int64_t, 4>{13, 1, 1, 1}, std::array<int64_t, 4>{1, 7, 1, 2},
          std::array<int64_t, 4>{13, 7, 1, 1}}) {
      Case c;
      const NodeId a = c.input(a_ne);
      const NodeId b = c.input(b_ne);
      const NodeId y = c.op(k, {a, b});
      EXPECT_LE(compare(c, y,
                        std::string(graph::op_name(k)) + " b=[" + std::to_string(b_ne[0]) + "," +
                            std::to_string(b_ne[1]) + "," + std::to_string(b_ne[2]) + "," +
                            std::to_string(b_ne[3]) + "]"),
                0.0);
    }
  }
  {  // a bias stored as F16 (converted on upload)
    Case c;
    const NodeId a = c.input({64, 5, 1, 1});
    const NodeId y = c.op(OpKind::kAdd, {a, c.weight(GgmlType::kF16, 64)});
    EXPECT_EQ(compare(c, y, "add f16 bias"), 0.0);
  }
  Case c;
  const NodeId x = c.input({12, 10, 1, 1});
  OpParams p;
  p.ne = {30, 4, 1, 1};
  const NodeId r = c.op(OpKind::kReshape, {x}, p);
  const NodeId s = c.op(OpKind::kScale, {r}, scale_params(2.0f));
  const NodeId r2 = c.op(OpKind::kReshape, {s}, reshape_params({12, 10, 1, 1}));
  const NodeId rows = c.op(OpKind::kGetRows, {r2, c.ints({9, 0, 4})});
  EXPECT_EQ(compare(c, rows, "reshape + get_rows"), 0.0);
}

// One attention problem: q [d, hq, tq], k / v [d, hkv, rows] of `kv_type`.
struct AttnSpec {
  GgmlType kv_type = GgmlType::kF32;
  std::optional<GgmlType> v_type;  // unset: kv_type
  int64_t d = 64, hq = 4, hkv = 2, tq = 1;
  int64_t tk = 0;  // key list length (0: tq + 11)
  bool paged = false, segments = false;
  graph::AttentionParams params;
};

double run_attention(const AttnSpec& s, const std::string& what) {
  Case c;
  std::mt19937 rng(7);
  const int64_t tk = s.tk != 0 ? s.tk : s.tq + 11;
  const int64_t rows = s.paged ? tk + 9 : tk;
  const NodeId q = c.input({s.d, s.hq, s.tq, 1});
  auto kv = [&](GgmlType t, uint32_t seed) {
    const NodeId id = c.g.add_state(graph::make_desc(t, s.d, s.hkv, rows), "kv");
    const auto f = quant::testing::gaussian(sz(s.d * s.hkv * rows), 1.0f, seed);
    const size_t rb = quant::testing::row_bytes(t, sz(s.d * s.hkv));
    std::vector<uint8_t> bytes(rb * sz(rows));
    for (size_t r = 0; r < sz(rows); ++r) {
      EXPECT_TRUE(quant::quantize_row(t, std::span(f).subspan(r * sz(s.d * s.hkv), sz(s.d * s.hkv)),
                                      std::span(bytes).subspan(r * rb, rb))
                      .ok());
    }
    c.bytes.push_back(std::move(bytes));
    c.b.bind_state(id, t, c.bytes.back());
    return id;
  };
  const NodeId k = kv(s.kv_type, 101), v = kv(s.v_type.value_or(s.kv_type), 202);
  // Query i of a batch at positions after the cached prefix; keys 0..tk-1, in list order.
  std::vector<int32_t> q_pos(sz(s.tq)), k_pos(sz(tk));
  for (int64_t i = 0; i < s.tq; ++i) q_pos[sz(i)] = static_cast<int32_t>(tk - s.tq + i);
  for (int64_t j = 0; j < tk; ++j) k_pos[sz(j)] = static_cast<int32_t>(j);
  std::vector<int32_t> k_rows;
  std::vector<int32_t> q_seg;
  if (s.paged) {
    k_rows.resize(sz(tk));
    std::vector<int32_t> perm(sz(rows));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t j = 0; j < tk; ++j) k_rows[sz(j)] = perm[sz(j)];
    for (int64_t j = 2; j < tk; j += 5) k_pos[sz(j)] = -1;  // padding entries
  }
  if (s.segments) {  // two sequences: list entries [0, split) and [split, tk), own positions
    const int32_t split = static_cast<int32_t>(tk / 2);
    const int64_t q1 = s.tq / 2;  // queries of the first sequence
    q_seg.resize(sz(2 * s.tq));
    for (int64_t i = 0; i < s.tq; ++i) {
      const bool first = i < q1;
      q_seg[sz(2 * i)] = first ? 0 : split;
      q_seg[sz(2 * i + 1)] = first ? split : static_cast<int32_t>(tk);
      q_pos[sz(i)] = static_cast<int32_t>(first ? split - q1 + i : (tk - split) - (s.tq - i));
    }
    for (int64_t j = split; j < tk; ++j) {
      if (k_pos[sz(j)] >= 0) k_pos[sz(j)] = static_cast<int32_t>(j - split);
    }
  }
  std::vector<NodeId> in = {q, k, v, c.ints(q_pos, "q_pos"), c.ints(k_pos, "k_pos")};
  if (s.paged) in.push_back(c.ints(k_rows, "k_rows"));
  if (s.segments) {
    const NodeId seg = c.g.add_input(graph::make_desc(GgmlType::kI32, 2, s.tq), "q_seg");
    c.i32.push_back(q_seg);
    c.b.bind_input(seg, std::span<const int32_t>(c.i32.back()));
    in.push_back(seg);
  }
  const NodeId y = c.op(OpKind::kAttention, in, attn_params(s.params));
  return compare(c, y, what);
}

TEST(OpenclOps, Attention) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16}) {
    const std::string ty = std::string(ggml_type_name(t)) + " ";
    for (int64_t tq : {1, 37}) {
      AttnSpec s;
      s.kv_type = t;
      s.tq = tq;
      s.params.scale = 0.125f;
      EXPECT_LE(run_attention(s, "attention " + ty + "GQA T=" + std::to_string(tq)), kF32Bound);
      s.params.sliding_window = 9;
      s.params.softcap = 3.0f;
      EXPECT_LE(run_attention(s, "attention " + ty + "window+softcap T=" + std::to_string(tq)),
                kF32Bound);
    }
    AttnSpec p;
    p.kv_type = t;
    p.tq = 37;
    p.tk = 150;  // several key chunks per work-group
    p.d = 80;
    p.hq = 6;
    p.hkv = 2;
    p.paged = true;
    p.params.scale = 0.1f;
    EXPECT_LE(run_attention(p, "attention " + ty + "paged k_rows"), kF32Bound);
    p.segments = true;
    EXPECT_LE(run_attention(p, "attention " + ty + "paged 2 sequences"), kF32Bound);
    p.params.causal = false;
    EXPECT_LE(run_attention(p, "attention " + ty + "non-causal"), kF32Bound);
  }
}

// Q8_0 / Q4_0 caches: the reference follows llama.cpp (q quantized to Q8_0 for the q.k block
// dots); so does the kernel, so only the online softmax's order differs.
TEST(OpenclOps, AttentionOverAQuantizedCache) {
  struct Kv {
    GgmlType k, v;
  };
  for (Kv t : {Kv{GgmlType::kQ8_0, GgmlType::kQ8_0}, Kv{GgmlType::kQ4_0, GgmlType::kQ4_0},
               Kv{GgmlType::kQ8_0, GgmlType::kQ4_0}}) {
    const std::string ty =
        std::string(ggml_type_name(t.k)) + "/" + std::string(ggml_type_name(t.v)) + " ";
    AttnSpec s;
    s.kv_type = t.k;
    s.v_type = t.v;
    s.params.scale = 0.125f;
    for (int64_t tq : {1, 37}) {
      s.tq = tq;
      EXPECT_LE(run_attention(s, "attention " + ty + "T=" + std::to_string(tq)), kBlockBound);
    }
    s.tk = 150;
    s.paged = s.segments = true;
    s.params.softcap = 4.0f;
    s.params.sliding_window = 40;
    EXPECT_LE(run_attention(s, "attention " + ty + "paged 2 seq window softcap"), kBlockBound);
  }
}

TEST(OpenclOps, UnsupportedWeightTypeSaysWhy) {
  Case c;
  const NodeId w = c.weight(GgmlType::kQ2_K, 256, 4);
  const NodeId y = c.op(OpKind::kMatMul, {w, c.input({256, 1, 1, 1})});
  const OpSupport s = shared_backend().supports(c.g, y);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_EQ(s.reason, "no matmul kernel for Q2_K");
  std::vector<float> out(4);
  c.b.bind_output(y, out);
  const Status st = shared_backend().run(c.g, c.b);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("Q2_K"), std::string::npos) << st.message();
}

TEST(OpenclOps, CacheWriteMatchesReferenceBytes) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    Case c;
    const int64_t rows = 11;
    const NodeId st = c.g.add_state(graph::make_desc(t, 32, 3, rows), "cache");
    const size_t rb = quant::testing::row_bytes(t, 96);
    std::vector<uint8_t> host(rb * sz(rows) + 7, 0xAB);  // longer than needed: room to grow
    std::vector<uint8_t> ref = host;
    const NodeId src = c.input({32, 3, 4, 1});
    const NodeId cw = c.op(OpKind::kCacheWrite, {st, src, c.ints({7, 0, 10, 3}, "slots")});
    const NodeId y = c.op(OpKind::kScale, {c.input({4, 1, 1, 1})}, scale_params(1.0f));
    (void)cw;
    std::vector<float> out(4);
    c.b.bind_output(y, out);
    c.b.bind_state(st, t, ref);
    ASSERT_TRUE(graph::run_reference(c.g, c.b).ok());
    c.b.bind_state(st, t, host);
    const Status s = shared_backend().run(c.g, c.b);
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(host, ref) << ggml_type_name(t);
  }
}

TEST(OpenclOps, CacheWriteSlotOutOfRangeWritesNothing) {
  Case c;
  const NodeId st = c.g.add_state(graph::make_desc(GgmlType::kF32, 8, 1, 4), "cache");
  std::vector<uint8_t> host(8 * 4 * 4, 0);
  c.b.bind_state(st, GgmlType::kF32, host);
  const NodeId cw = c.op(OpKind::kCacheWrite, {st, c.input({8, 1, 2, 1}), c.ints({1, 4}, "slots")});
  (void)cw;
  const Status s = shared_backend().run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](uint8_t v) { return v == 0; }));
}

// Devices without cl_khr_fp64 (Adreno) build the kernels with `wide` = float: they must still
// compile and stay within the f32 bounds; the block MatMul does not depend on fp64.
TEST(OpenclOps, WithoutFp64TheF32FallbackStaysClose) {
  OpenclBackendOptions o;
  o.program_cache_dir = "none";
  o.use_fp64 = false;
  auto b = make_opencl_backend(o);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  {
    Case c;
    const NodeId x = c.input({96, 5, 1, 1});
    const NodeId n = c.op(OpKind::kRmsNorm, {x, c.weight(GgmlType::kF32, 96)});
    const NodeId g = c.op(OpKind::kSilu, {n});
    EXPECT_LE(compare(c, g, "no fp64: rms_norm + silu", **b), kF32Bound);
  }
  {
    Case c;
    const NodeId y = c.op(OpKind::kSoftmax, {c.input({77, 3, 1, 1})}, scale_params(0.7f));
    EXPECT_LE(compare(c, y, "no fp64: softmax", **b), kF32Bound);
  }
  {
    Case c;
    OpParams p;
    p.rope.base = 10000.0f;
    const NodeId y =
        c.op(OpKind::kRope, {c.input({64, 3, 4, 1}), c.ints({0, 7, 300, 4000}, "pos")}, p);
    EXPECT_LE(compare(c, y, "no fp64: rope", **b), kF32Bound);
  }
  {
    Case c;
    const NodeId y =
        c.op(OpKind::kMatMul, {c.weight(GgmlType::kQ4_K, 512, 20), c.input({512, 3, 1, 1})});
    EXPECT_LE(compare(c, y, "no fp64: matmul Q4_K", **b), kBlockBound);
  }
}

// RoPE's cos / sin table is built on the host, so freq_factors must be readable there.
TEST(OpenclOps, RopeWithComputedFreqFactorsIsUnsupportedAndSaysWhy) {
  Case c;
  const NodeId ff = c.op(OpKind::kScale, {c.input({16, 1, 1, 1})}, scale_params(2.0f));
  OpParams p;
  p.rope.base = 10000.0f;
  const NodeId y = c.op(OpKind::kRope, {c.input({32, 2, 1, 1}), c.ints({3}, "pos"), ff}, p);
  const OpSupport s = shared_backend().supports(c.g, y);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_NE(s.reason.find("freq_factors"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace geniex::backends::opencl_test
