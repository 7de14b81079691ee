// The OpenCL ops at the real Gemma 3 270M's shapes and weight types (issue #8): prefill of 256
// tokens, hidden 640, FFN 2048, 4 query heads of 256 on 1 kv head, an F16 cache, per-layer RoPE
// bases. The Q4_K_M file holds Q5_0 / Q8_0 weights where K = 640 (not a multiple of 256) and
// Q4_K / Q6_K elsewhere. Each op is compared with graph::run_reference under the bounds the
// small-shape tests use (README "Numerics"); these shapes run several work-group passes, key
// chunks and activation-quantizer blocks per row that the small ones do not reach.
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "backends/opencl/opencl_test_util.h"

namespace geniex::backends::opencl_test {
namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

constexpr int64_t kTokens = 256;

std::vector<int32_t> iota_i32(int64_t n) {
  std::vector<int32_t> v(sz(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

struct MatMulShape {
  GgmlType type;
  int64_t k, n;
  const char* what;
};

// Names the shape in test listings (gtest would print the struct's bytes, pointer included).
void PrintTo(const MatMulShape& s, std::ostream* os) { *os << s.what; }

class OpenclGemmaMatMul : public ::testing::TestWithParam<MatMulShape> {};

// Block MatMul at T = 256 (and a single decode row): the reference's arithmetic, as at small
// shapes (~1e-14).
TEST_P(OpenclGemmaMatMul, MatchesReferenceAtPrefill) {
  const MatMulShape s = GetParam();
  for (int64_t m : {int64_t{1}, kTokens}) {
    Case c;
    const NodeId w = c.weight(s.type, s.k, s.n);
    const NodeId x = c.input({s.k, m, 1, 1}, 2.0f);
    const NodeId y = c.op(OpKind::kMatMul, {w, x});
    EXPECT_LE(compare(c, y, std::string("gemma ") + s.what + " T=" + std::to_string(m)), 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Gemma270m, OpenclGemmaMatMul,
    ::testing::Values(MatMulShape{GgmlType::kQ5_0, 640, 1024, "attn_q Q5_0 640->1024"},
                      MatMulShape{GgmlType::kQ8_0, 640, 256, "attn_v Q8_0 640->256"},
                      MatMulShape{GgmlType::kQ5_0, 640, 2048, "ffn_up Q5_0 640->2048"},
                      MatMulShape{GgmlType::kQ4_K, 1024, 640, "attn_output Q4_K 1024->640"},
                      MatMulShape{GgmlType::kQ6_K, 2048, 640, "ffn_down Q6_K 2048->640"},
                      MatMulShape{GgmlType::kQ4_K, 2048, 640, "ffn_down Q4_K 2048->640"}),
    [](const auto& i) {
      return std::string(ggml_type_name(i.param.type)) + "_" + std::to_string(i.param.k) + "x" +
             std::to_string(i.param.n);
    });

// q / k norms over head_dim 256, the 640-wide norms, and neox RoPE with both of Gemma's bases at
// positions 0..255: bit-identical to the reference.
TEST(OpenclGemmaShapes, NormsAndRopeAreBitIdentical) {
  for (auto ne :
       {std::array<int64_t, 4>{640, kTokens, 1, 1}, std::array<int64_t, 4>{256, 4, kTokens, 1}}) {
    Case c;
    const NodeId x = c.input(ne, 3.0f);
    OpParams p;
    p.eps = 1e-6f;
    const NodeId y = c.op(OpKind::kRmsNorm, {x, c.weight(GgmlType::kF32, ne[0])}, p);
    EXPECT_EQ(compare(c, y, "gemma rms_norm " + std::to_string(ne[0])), 0.0);
  }
  for (float base : {10000.0f, 1000000.0f}) {
    Case c;
    const NodeId x = c.input({256, 4, kTokens, 1});
    OpParams p;
    p.rope.mode = graph::RopeMode::kNeox;
    p.rope.base = base;
    const NodeId y = c.op(OpKind::kRope, {x, c.ints(iota_i32(kTokens), "pos")}, p);
    EXPECT_EQ(compare(c, y, "gemma rope neox base " + std::to_string(static_cast<int>(base))), 0.0);
  }
}

// A [d, heads, rows] F16 state filled with quantize_row(F16) of Gaussian values.
NodeId f16_state(Case& c, int64_t d, int64_t heads, int64_t rows, uint32_t seed) {
  const NodeId id = c.g.add_state(graph::make_desc(GgmlType::kF16, d, heads, rows), "kv");
  const auto f = quant::testing::gaussian(sz(d * heads * rows), 1.0f, seed);
  const size_t rb = quant::testing::row_bytes(GgmlType::kF16, sz(d * heads));
  std::vector<uint8_t> bytes(rb * sz(rows));
  for (size_t r = 0; r < sz(rows); ++r) {
    EXPECT_TRUE(quant::quantize_row(GgmlType::kF16,
                                    std::span(f).subspan(r * sz(d * heads), sz(d * heads)),
                                    std::span(bytes).subspan(r * rb, rb))
                    .ok());
  }
  c.bytes.push_back(std::move(bytes));
  c.b.bind_state(id, GgmlType::kF16, c.bytes.back());
  return id;
}

// Prefill attention: head_dim 256, 4 query heads on 1 kv head, 256 F16 cache rows, causal,
// sliding window 512, scale 1/16; q rounded to f16 and p to f16 as the CPU backend (the
// reference keeps both in f32 / double: ~2e-7, within the F32 bound).
TEST(OpenclGemmaShapes, PrefillAttentionOverAnF16Cache) {
  for (int64_t tq : {int64_t{1}, int64_t{37}, kTokens}) {
    Case c;
    const int64_t d = 256, tk = kTokens;
    const NodeId q = c.input({d, 4, tq, 1}, 4.0f);
    const NodeId k = f16_state(c, d, 1, tk, 11);
    const NodeId v = f16_state(c, d, 1, tk, 12);
    std::vector<int32_t> q_pos(sz(tq));
    for (int64_t i = 0; i < tq; ++i) q_pos[sz(i)] = static_cast<int32_t>(tk - tq + i);
    OpParams p;
    p.attn.scale = 1.0f / 16.0f;
    p.attn.sliding_window = 512;
    const NodeId y = c.op(OpKind::kAttention,
                          {q, k, v, c.ints(q_pos, "q_pos"), c.ints(iota_i32(tk), "k_pos")}, p);
    EXPECT_LE(compare(c, y, "gemma attention F16 d=256 4:1 T=" + std::to_string(tq)), 1e-5);
  }
}

}  // namespace
}  // namespace geniex::backends::opencl_test
