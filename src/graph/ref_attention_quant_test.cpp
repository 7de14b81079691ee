// ref::attention_blocks (Q8_0 / Q4_0 caches, llama.cpp flash-attention numerics):
// * its online softmax is a softmax: against a double-precision softmax of the same f32 scores
//   (quant::vec_dot_ref of k with the Q8_0-quantized q) weighting the dequantized V, 1e-5;
// * quantization error against F32 attention on the unquantized data (random Gaussian q, k, v,
//   d 128, GQA 8/2, 4 queries over 300 keys, scale 1/sqrt(d)): relative L2 error of the output,
//   measured Q8_0 9.3e-3, Q4_0 0.127, Q8_0 K / Q4_0 V 0.088 (bounds 1.5e-2, 0.16, 0.12). Most of
//   it is the formats' own rounding of Gaussian data: V alone quantized gives 5.4e-3 (Q8_0) and
//   8.6e-2 (Q4_0) at any n_kv, since the output is a weighted mean of V rows; K (with q8 q) adds
//   a comparable part that grows with sharper attention (scale x4, 2000 keys: Q8_0 2.1e-2,
//   Q4_0 0.22). A 5e-2 bound for Q4_0 is out of reach for any Q4_0 cache on such data.
// * one visible key gives exactly its dequantized V row;
// * paging: scattered rows bit-identical to contiguous, NaN blocks in unused rows never read;
// * errors: types, head dims, sizes (kInvalidArgument) and rows (kOutOfRange).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::graph {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

size_t head_bytes(GgmlType t, int64_t n) {
  return static_cast<size_t>(*ggml_row_bytes(t, static_cast<uint64_t>(n)));
}

// Rows of n floats quantized to t, and their dequantized values.
struct Quantized {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Quantized quantize(GgmlType t, const std::vector<float>& x, int64_t n) {
  Quantized q;
  const size_t hb = head_bytes(t, n), rows = x.size() / sz(n);
  q.bytes.resize(hb * rows);
  q.values.resize(x.size());
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(quant::quantize_row(t, std::span(x).subspan(r * sz(n), sz(n)),
                                    std::span(q.bytes).subspan(r * hb, hb))
                    .ok());
    EXPECT_TRUE(quant::dequantize_row(t, std::span(q.bytes).subspan(r * hb, hb),
                                      std::span(q.values).subspan(r * sz(n), sz(n)))
                    .ok());
  }
  return q;
}

struct Inputs {
  ref::AttentionDims dims;
  std::vector<float> q, k, v;
  std::vector<int32_t> q_pos, k_pos;
  AttentionParams params;
};

Inputs make_inputs(int64_t d, int64_t nh, int64_t nkvh, int64_t nq, int64_t n_kv, uint32_t seed) {
  Inputs s;
  s.dims = {d, d, nh, nkvh, nq, n_kv};
  s.q = gaussian(sz(d * nh * nq), seed);
  s.k = gaussian(sz(d * nkvh * n_kv), seed + 1);
  s.v = gaussian(sz(d * nkvh * n_kv), seed + 2);
  s.k_pos.resize(sz(n_kv));
  std::iota(s.k_pos.begin(), s.k_pos.end(), 0);
  for (int64_t t = 0; t < nq; ++t) s.q_pos.push_back(static_cast<int32_t>(n_kv - nq + t));
  s.params.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return s;
}

std::vector<float> run_blocks(const Inputs& s, const Quantized& k, GgmlType kt, const Quantized& v,
                              GgmlType vt, const ref::AttentionPaging& paging = {},
                              int64_t n_rows = 0) {
  ref::AttentionDims dims = s.dims;
  dims.n_rows = n_rows;
  std::vector<float> out(sz(dims.head_dim_v * dims.n_head * dims.n_q));
  const Status st = ref::attention_blocks(s.q, {kt, k.bytes}, {vt, v.bytes}, dims, s.q_pos, s.k_pos,
                                          s.params, paging, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

TEST(RefAttentionBlocks, OnlineSoftmaxIsTheSoftmaxOfTheQuantizedScores) {
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    Inputs s = make_inputs(64, 4, 2, 3, 50, 7);
    s.params.sliding_window = 20;
    for (float cap : {0.0f, 5.0f}) {
      s.params.softcap = cap;
      const Quantized k = quantize(t, s.k, 64), v = quantize(t, s.v, 64);
      const auto got = run_blocks(s, k, t, v, t);
      // Independent: scores from vec_dot_ref with the quantized q, softmax and p.v in double.
      const auto& d = s.dims;
      std::vector<uint8_t> q8(head_bytes(GgmlType::kQ8_0, d.head_dim));
      const size_t kb = head_bytes(t, d.head_dim);
      for (int64_t tq = 0; tq < d.n_q; ++tq) {
        for (int64_t h = 0; h < d.n_head; ++h) {
          const int64_t kvh = h / (d.n_head / d.n_kv_head);
          ASSERT_TRUE(quant::quantize_row(GgmlType::kQ8_0,
                                          std::span(s.q).subspan(sz((tq * d.n_head + h) * 64), 64),
                                          q8)
                          .ok());
          std::vector<double> sc;
          std::vector<int64_t> keys;
          for (int64_t j = 0; j < d.n_kv; ++j) {
            if (!ref::attention_visible(s.q_pos[sz(tq)], s.k_pos[sz(j)], s.params)) continue;
            const size_t off = sz(j * d.n_kv_head + kvh) * kb;
            auto dot = quant::vec_dot_ref(t, std::span(k.bytes).subspan(off, kb), q8, 64);
            ASSERT_TRUE(dot.ok());
            double x = static_cast<double>(*dot) * s.params.scale;
            if (cap > 0.0f) x = cap * std::tanh(x / cap);
            sc.push_back(x);
            keys.push_back(j);
          }
          double mx = -INFINITY, sum = 0.0;
          for (double x : sc) mx = std::max(mx, x);
          for (double& x : sc) sum += (x = std::exp(x - mx));
          for (int64_t i = 0; i < 64; ++i) {
            double o = 0.0;
            for (size_t m = 0; m < keys.size(); ++m) {
              o += sc[m] / sum * v.values[sz((keys[m] * d.n_kv_head + kvh) * 64 + i)];
            }
            EXPECT_NEAR(got[sz((tq * d.n_head + h) * 64 + i)], o, 1e-5)
                << ggml_type_name(t) << " cap " << cap;
          }
        }
      }
    }
  }
}

TEST(RefAttentionBlocks, QuantizationErrorAgainstF32Attention) {
  const Inputs s = make_inputs(128, 8, 2, 4, 300, 11);
  std::vector<float> f32(sz(128 * 8 * 4));
  ASSERT_TRUE(ref::attention(s.q, s.k, s.v, s.dims, s.q_pos, s.k_pos, s.params, f32).ok());
  struct Bound {
    GgmlType kt, vt;
    double max_rel_l2;
  };
  // Measured on these inputs: 9.3e-3, 0.127, 0.088 (see the file comment).
  for (const Bound& b : {Bound{GgmlType::kQ8_0, GgmlType::kQ8_0, 1.5e-2},
                         Bound{GgmlType::kQ4_0, GgmlType::kQ4_0, 0.16},
                         Bound{GgmlType::kQ8_0, GgmlType::kQ4_0, 0.12}}) {
    const auto got = run_blocks(s, quantize(b.kt, s.k, 128), b.kt, quantize(b.vt, s.v, 128), b.vt);
    const double e = rel_l2(got, f32);
    std::printf("relative L2 error %s K / %s V vs F32: %.3g\n", ggml_type_name(b.kt).data(),
                ggml_type_name(b.vt).data(), e);
    EXPECT_LE(e, b.max_rel_l2) << ggml_type_name(b.kt) << "/" << ggml_type_name(b.vt);
  }
}

TEST(RefAttentionBlocks, OneVisibleKeyGivesItsValueRowExactly) {
  Inputs s = make_inputs(32, 2, 1, 1, 4, 3);
  s.k_pos = {-1, 0, -1, -1};
  s.q_pos = {5};
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const Quantized k = quantize(t, s.k, 32), v = quantize(t, s.v, 32);
    const auto got = run_blocks(s, k, t, v, t);
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(got[sz(h * 32 + i)], v.values[sz(32 + i)]);
    }
  }
}

TEST(RefAttentionBlocks, ScatteredRowsEqualContiguousAndNaNRowsAreNotRead) {
  const Inputs s = make_inputs(64, 4, 1, 2, 40, 21);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const Quantized k = quantize(t, s.k, 64), v = quantize(t, s.v, 64);
    const auto want = run_blocks(s, k, t, v, t);
    // Entry j at row 2 j + 1 of an 81-row state; even rows are blocks with a NaN scale.
    const size_t hb = head_bytes(t, 64);
    Quantized ks{std::vector<uint8_t>(hb * 81), {}}, vs{std::vector<uint8_t>(hb * 81), {}};
    const size_t block = traits(t).type_size;
    for (size_t b = 0; b < ks.bytes.size(); b += block) {
      ks.bytes[b] = vs.bytes[b] = 0x00;
      ks.bytes[b + 1] = vs.bytes[b + 1] = 0x7E;
    }
    std::vector<int32_t> rows;
    for (int32_t j = 0; j < 40; ++j) {
      rows.push_back(2 * j + 1);
      std::copy_n(k.bytes.begin() + j * long(hb), hb, ks.bytes.begin() + (2 * j + 1) * long(hb));
      std::copy_n(v.bytes.begin() + j * long(hb), hb, vs.bytes.begin() + (2 * j + 1) * long(hb));
    }
    const auto got = run_blocks(s, ks, t, vs, t, {rows, {}}, 81);
    EXPECT_EQ(got, want) << ggml_type_name(t);
  }
}

TEST(RefAttentionBlocks, Errors) {
  const Inputs s = make_inputs(64, 2, 1, 1, 4, 5);
  const Quantized k8 = quantize(GgmlType::kQ8_0, s.k, 64);
  std::vector<float> out(128);
  auto code = [&](GgmlType kt, GgmlType vt, std::span<const uint8_t> kb, ref::AttentionDims d,
                  std::vector<int32_t> rows = {}) {
    return ref::attention_blocks(s.q, {kt, kb}, {vt, k8.bytes}, d, s.q_pos, s.k_pos, s.params,
                                 {rows, {}}, out)
        .code();
  };
  const auto q8 = GgmlType::kQ8_0;
  EXPECT_EQ(code(q8, q8, k8.bytes, s.dims), StatusCode::kOk);
  EXPECT_EQ(code(GgmlType::kF16, q8, k8.bytes, s.dims), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(q8, GgmlType::kQ4_1, k8.bytes, s.dims), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(q8, q8, std::span(k8.bytes).first(k8.bytes.size() - 1), s.dims),
            StatusCode::kInvalidArgument);
  ref::AttentionDims odd = s.dims;
  odd.head_dim = odd.head_dim_v = 48;
  EXPECT_EQ(code(q8, q8, k8.bytes, odd), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(q8, q8, k8.bytes, s.dims, {0, 1, 2, 4}), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace geniex::graph
