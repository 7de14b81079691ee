// Reference elementwise, normalization, softmax and RoPE ops against hand-computed values.
#include "graph/ref_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace geniex::graph {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(RefOps, RmsNormHandExample) {
  const std::vector<float> x = {1, 2, 3, 4, -2, 0, 0, 0};
  const std::vector<float> w = {1, 0.5f, 2, -1};
  std::vector<float> y(8);
  ASSERT_TRUE(ref::rms_norm(x, {}, 4, 0.0f, y).ok());
  const float inv = 1.0f / std::sqrt(7.5f);
  EXPECT_NEAR(y[0], 1 * inv, 1e-6);
  EXPECT_NEAR(y[3], 4 * inv, 1e-6);
  EXPECT_NEAR(y[4], -2.0f, 1e-6);  // row 2: mean(x^2) = 1
  ASSERT_TRUE(ref::rms_norm(x, w, 4, 0.0f, y).ok());
  EXPECT_NEAR(y[1], 0.365148372f, 1e-6);
  EXPECT_NEAR(y[2], 2.190890230f, 1e-6);
  EXPECT_NEAR(y[3], -1.460593487f, 1e-6);
  // eps enters under the root: all-zero rows stay finite.
  std::vector<float> z(4, 0.0f), zy(4);
  ASSERT_TRUE(ref::rms_norm(z, {}, 4, 1e-6f, zy).ok());
  EXPECT_EQ(zy[0], 0.0f);
  EXPECT_FALSE(ref::rms_norm(x, w, 3, 0.0f, y).ok());
}

TEST(RefOps, SoftmaxSumsToOneAndHandlesInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, 2, 3, 1000, 1001, -inf, -inf, -inf, -inf, 0, -inf, 0};
  std::vector<float> y(x.size());
  ASSERT_TRUE(ref::softmax(x, 3, 1.0f, y).ok());
  for (int r = 0; r < 4; ++r) {
    double s = y[r * 3] + y[r * 3 + 1] + y[r * 3 + 2];
    if (r == 2) {
      EXPECT_EQ(s, 0.0);  // all -inf: zeros, not NaN
    } else {
      EXPECT_NEAR(s, 1.0, 1e-6) << r;
    }
  }
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0);
  EXPECT_NEAR(y[0], e1 / (e1 + e2 + e3), 1e-7);
  EXPECT_NEAR(y[4], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);  // large values: max subtracted
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[10], 0.0f);
  EXPECT_NEAR(y[9], 0.5f, 1e-7);
  // Input scale.
  ASSERT_TRUE(ref::softmax(std::vector<float>{0, 1}, 2, 2.0f, std::span<float>(y).first(2)).ok());
  EXPECT_NEAR(y[1], std::exp(2.0) / (1 + std::exp(2.0)), 1e-6);
}

TEST(RefOps, GeluTanhAndSiluAtSamplePoints) {
  struct P {
    float x;
    double gelu, silu;
  };
  const P pts[] = {{-3, -0.0036373920817729943, -0.14227761953270035},
                   {-1, -0.15880800939172324, -0.2689414213699951},
                   {-0.5f, -0.15428599017485606, -0.1887703343990727},
                   {0, 0.0, 0.0},
                   {0.5f, 0.34571400982514394, 0.3112296656009273},
                   {1, 0.8411919906082768, 0.7310585786300049},
                   {2, 1.954597694087775, 1.7615941559557646},
                   {5, 4.999999770820381, 4.966535745378576}};
  for (const P& p : pts) {
    EXPECT_NEAR(ref::gelu_tanh(p.x), p.gelu, 1e-6) << p.x;
    EXPECT_NEAR(ref::silu(p.x), p.silu, 1e-6) << p.x;
  }
  std::vector<float> x = {-1, 2}, y(2);
  ASSERT_TRUE(ref::unary(OpKind::kGelu, x, 1.0f, y).ok());
  EXPECT_EQ(y[1], ref::gelu_tanh(2));
  ASSERT_TRUE(ref::unary(OpKind::kScale, x, 0.25f, y).ok());
  EXPECT_EQ(y[0], -0.25f);
  ASSERT_TRUE(ref::unary(OpKind::kSoftcap, x, 30.0f, y).ok());
  EXPECT_NEAR(y[1], 30.0 * std::tanh(2.0 / 30.0), 1e-6);
  EXPECT_FALSE(ref::unary(OpKind::kAdd, x, 1.0f, y).ok());
}

TEST(RefOps, GluBothActivations) {
  std::vector<float> gate = {1, -1}, up = {2, 3}, y(2);
  ASSERT_TRUE(ref::glu(GluActivation::kSilu, gate, up, y).ok());
  EXPECT_NEAR(y[0], 2 * 0.7310585786300049, 1e-6);
  ASSERT_TRUE(ref::glu(GluActivation::kGeluTanh, gate, up, y).ok());
  EXPECT_NEAR(y[1], 3 * -0.15880800939172324, 1e-6);
}

TEST(RefOps, BinaryBroadcast) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [3, 2]
  std::vector<float> row = {10, 20, 30};      // [3, 1]
  std::vector<float> col = {2, 3};            // [1, 2]
  std::vector<float> y(6);
  ASSERT_TRUE(ref::binary(OpKind::kAdd, a, {3, 2, 1, 1}, row, {3, 1, 1, 1}, y).ok());
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  ASSERT_TRUE(ref::binary(OpKind::kMul, a, {3, 2, 1, 1}, col, {1, 2, 1, 1}, y).ok());
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 12, 15, 18}));
  EXPECT_FALSE(ref::binary(OpKind::kMul, a, {3, 2, 1, 1}, col, {2, 1, 1, 1}, y).ok());
}

TEST(RefOps, RopeHandExampleBothModes) {
  // head_dim 4, one head, position 1, base 10000: theta_0 = 1, theta_1 = 0.01.
  const std::vector<float> x = {1, 0, 0, 1};
  const std::vector<int32_t> pos = {1};
  std::vector<float> y(4);
  RopeParams p;
  p.mode = RopeMode::kNormal;  // pairs (0,1) and (2,3)
  ASSERT_TRUE(ref::rope(x, 4, 1, 1, pos, p, {}, y).ok());
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(y[1], std::sin(1.0), 1e-7);
  EXPECT_NEAR(y[2], -std::sin(0.01), 1e-7);
  EXPECT_NEAR(y[3], std::cos(0.01), 1e-7);
  p.mode = RopeMode::kNeox;  // pairs (0,2) and (1,3)
  ASSERT_TRUE(ref::rope(x, 4, 1, 1, pos, p, {}, y).ok());
  EXPECT_NEAR(y[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(y[2], std::sin(1.0), 1e-7);
  EXPECT_NEAR(y[1], -std::sin(0.01), 1e-7);
  EXPECT_NEAR(y[3], std::cos(0.01), 1e-7);
  // freq_factors divide the angle; freq_scale multiplies it: pos 2, ff = {2, 1}, scale 0.5
  // gives theta_0 = 2*0.5/2 = 0.5 and theta_1 = 2*0.5*0.01 = 0.01.
  const std::vector<int32_t> pos2 = {2};
  const std::vector<float> ff = {2, 1};
  p.freq_scale = 0.5f;
  ASSERT_TRUE(ref::rope(x, 4, 1, 1, pos2, p, ff, y).ok());
  EXPECT_NEAR(y[0], std::cos(0.5), 1e-7);
  EXPECT_NEAR(y[2], std::sin(0.5), 1e-7);
  EXPECT_NEAR(y[1], -std::sin(0.01), 1e-7);
}

TEST(RefOps, RopePartialDimsPassThrough) {
  const auto x = random_vec(6 * 2 * 3, 1);
  const std::vector<int32_t> pos = {3, 7, 11};
  std::vector<float> y(x.size());
  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
    RopeParams p;
    p.mode = mode;
    p.n_dims = 4;
    ASSERT_TRUE(ref::rope(x, 6, 2, 3, pos, p, {}, y).ok());
    for (size_t r = 0; r < 6; ++r) {
      EXPECT_EQ(y[r * 6 + 4], x[r * 6 + 4]);
      EXPECT_EQ(y[r * 6 + 5], x[r * 6 + 5]);
      // Rotation preserves the norm of the rotated part.
      double n0 = 0, n1 = 0;
      for (size_t i = 0; i < 4; ++i) {
        n0 += double(x[r * 6 + i]) * x[r * 6 + i];
        n1 += double(y[r * 6 + i]) * y[r * 6 + i];
      }
      EXPECT_NEAR(n0, n1, 1e-5);
    }
  }
}

TEST(RefOps, RopeAnglesAdd) {
  // Rotating by p then by q equals rotating by p + q (angles are linear in position).
  const int64_t d = 16, h = 3, t = 4;
  const auto x = random_vec(size_t(d * h * t), 2);
  const std::vector<int32_t> p = {0, 5, 100, 4000}, q = {1, 17, 3, 96}, pq = {1, 22, 103, 4096};
  std::vector<float> ff(6);
  for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.5f * float(i);
  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
    RopeParams rp;
    rp.mode = mode;
    rp.n_dims = 12;
    rp.base = 500000.0f;
    rp.freq_scale = 0.125f;
    std::vector<float> a(x.size()), b(x.size()), c(x.size());
    ASSERT_TRUE(ref::rope(x, d, h, t, p, rp, ff, a).ok());
    ASSERT_TRUE(ref::rope(a, d, h, t, q, rp, ff, b).ok());
    ASSERT_TRUE(ref::rope(x, d, h, t, pq, rp, ff, c).ok());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(b[i], c[i], 2e-5) << i;
  }
}

TEST(RefOps, RopeRejectsBadSizes) {
  std::vector<float> x(8), y(8);
  const std::vector<int32_t> pos = {0};
  RopeParams p;
  p.n_dims = 3;
  EXPECT_FALSE(ref::rope(x, 8, 1, 1, pos, p, {}, y).ok());
  p.n_dims = 0;
  EXPECT_FALSE(ref::rope(x, 8, 1, 2, pos, p, {}, y).ok());
  const std::vector<float> ff(3);
  EXPECT_FALSE(ref::rope(x, 8, 1, 1, pos, p, ff, y).ok());
}

// kHadamard against the matrix llama.cpp builds (ggml_gen_hadamard: H_1 = 1 / sqrt(n), each
// doubling [[H, H], [H, -H]]): y = H x per block, and H is its own inverse.
TEST(RefOps, HadamardIsTheSylvesterMatrixAndItsOwnInverse) {
  for (int32_t n : {2, 8, 64, 256}) {
    const auto w = static_cast<size_t>(n);
    std::vector<double> h(w * w);
    h[0] = 1.0 / std::sqrt(static_cast<double>(n));
    for (size_t s = 1; s < w; s *= 2) {
      for (size_t i = 0; i < s; ++i) {
        for (size_t j = 0; j < s; ++j) {
          const double v = h[i * w + j];
          h[(i + s) * w + j] = v;
          h[i * w + j + s] = v;
          h[(i + s) * w + j + s] = -v;
        }
      }
    }
    const auto x = random_vec(3 * w, 40 + static_cast<uint32_t>(n));
    std::vector<float> y(x.size()), back(x.size());
    ASSERT_TRUE(ref::hadamard(x, n, y).ok());
    for (size_t b = 0; b < 3; ++b) {
      for (size_t i = 0; i < w; ++i) {
        double want = 0.0;
        for (size_t j = 0; j < w; ++j) want += h[i * w + j] * x[b * w + j];
        ASSERT_NEAR(y[b * w + i], want, 1e-5) << "n " << n << " block " << b << " row " << i;
      }
    }
    ASSERT_TRUE(ref::hadamard(y, n, back).ok());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(back[i], x[i], 1e-5) << "n " << n;
  }
  std::vector<float> x(12), y(12);
  EXPECT_FALSE(ref::hadamard(x, 3, y).ok());                             // not a power of two
  EXPECT_FALSE(ref::hadamard(x, 8, y).ok());                             // does not divide 12
  EXPECT_FALSE(ref::hadamard(x, 4, std::span<float>(y).first(8)).ok());  // y too small
}

}  // namespace
}  // namespace geniex::graph

namespace geniex::graph::ref {
namespace {

// L = 3, E = 2: out[c, t] = w0 h[t-2] + w1 h[t-1] + w2 h[t]. Slot 1's state feeds its first
// tokens; slot 0 starts from its own state; a padding token (-1) gives 0 and changes nothing.
TEST(RefOps, ShortConvCarriesEachSlotsState) {
  const std::vector<float> w = {1, 10, 100, 2, 20, 200};  // channel 0 taps, channel 1 taps
  // tokens: t0 slot 1, t1 slot 0, t2 padding, t3 slot 1
  const std::vector<float> u = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int32_t> seq = {1, 0, -1, 1};
  // state [E=2, 2 columns, S=2]: slot 0 columns (a, b), slot 1 columns (c, d)
  const std::vector<float> state = {0.5f, 0.25f, 1.5f, 1.25f, -1, -2, -3, -4};
  std::vector<float> conv(8), next(8);
  ASSERT_TRUE(short_conv(u, 2, 4, w, 3, state, seq, conv, next).ok());
  // t0 (slot 1): history (-1, -3), then u0 = 1  ->  c0: -1 - 30 + 100
  EXPECT_FLOAT_EQ(conv[0], -1.0f * 1 + -3.0f * 10 + 1.0f * 100);
  EXPECT_FLOAT_EQ(conv[1], -2.0f * 2 + -4.0f * 20 + 2.0f * 200);
  // t1 (slot 0): history (0.5, 1.5), u1 = 3
  EXPECT_FLOAT_EQ(conv[2], 0.5f * 1 + 1.5f * 10 + 3.0f * 100);
  EXPECT_FLOAT_EQ(conv[5], 0.0f);  // padding
  // t3 (slot 1): history (-3, u0 = 1), u3 = 7
  EXPECT_FLOAT_EQ(conv[6], -3.0f * 1 + 1.0f * 10 + 7.0f * 100);
  // New states: slot 0 = (1.5, u1), slot 1 = (u0, u3).
  EXPECT_EQ(next, (std::vector<float>{1.5f, 1.25f, 3, 4, 1, 2, 7, 8}));
  // Without state: one fresh sequence from zeros.
  std::vector<float> fresh(8);
  ASSERT_TRUE(short_conv(u, 2, 4, w, 3, {}, {}, fresh, {}).ok());
  EXPECT_FLOAT_EQ(fresh[0], 100.0f);
  EXPECT_FLOAT_EQ(fresh[2], 1.0f * 10 + 3.0f * 100);
  // A slot outside [0, S).
  const std::vector<int32_t> bad = {0, 2, 0, 0};
  EXPECT_EQ(short_conv(u, 2, 4, w, 3, state, bad, conv, {}).code(), StatusCode::kOutOfRange);
}

// kLayerNorm by hand (biased variance, eps under the root) and against a direct float-free
// computation on random rows with a large common offset (a one-pass E[x^2] - E[x]^2 would lose
// it: the reference subtracts the mean first).
TEST(RefOps, LayerNormHandExampleAndOffsetRows) {
  const std::vector<float> x = {1, 2, 3, 4, -2, -2, -2, -2};
  const std::vector<float> w = {1, 0.5f, 2, -1};
  const std::vector<float> b = {0, 1, -1, 0.25f};
  std::vector<float> y(8);
  ASSERT_TRUE(ref::layer_norm(x, {}, {}, 4, 0.0f, y).ok());
  const double inv = 1.0 / std::sqrt(1.25);  // row 1: mean 2.5, var (2.25 + 0.25) * 2 / 4
  EXPECT_NEAR(y[0], -1.5 * inv, 1e-6);
  EXPECT_NEAR(y[3], 1.5 * inv, 1e-6);
  ASSERT_TRUE(ref::layer_norm(x, {}, {}, 4, 1e-5f, y).ok());
  EXPECT_EQ(y[4], 0.0f);  // a constant row: 0 / sqrt(eps)
  ASSERT_TRUE(ref::layer_norm(x, w, b, 4, 0.0f, y).ok());
  EXPECT_NEAR(y[0], -1.5 * inv * 1 + 0, 1e-6);
  EXPECT_NEAR(y[1], -0.5 * inv * 0.5 + 1, 1e-6);
  EXPECT_NEAR(y[2], 0.5 * inv * 2 - 1, 1e-6);
  EXPECT_NEAR(y[3], 1.5 * inv * -1 + 0.25, 1e-6);
  ASSERT_TRUE(ref::layer_norm(x, w, {}, 4, 0.0f, y).ok());
  EXPECT_NEAR(y[1], -0.5 * inv * 0.5, 1e-6);
  ASSERT_TRUE(ref::layer_norm(x, w, b, 4, 1e-5f, y).ok());
  EXPECT_EQ(y[5], 1.0f);  // the constant row gives b

  const int64_t n = 768;
  auto r = random_vec(3 * n, 7);
  for (auto& v : r) v = v * 0.01f + 1000.0f;
  std::vector<float> ry(r.size());
  ASSERT_TRUE(ref::layer_norm(r, {}, {}, n, 1e-6f, ry).ok());
  for (int64_t row = 0; row < 3; ++row) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += r[row * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (r[row * n + i] - mean) * (r[row * n + i] - mean);
    var /= n;
    double s1 = 0.0, s2 = 0.0;  // the output's mean is 0, its variance var / (var + eps)
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(ry[row * n + i], (r[row * n + i] - mean) / std::sqrt(var + 1e-6), 1e-5);
      s1 += ry[row * n + i];
      s2 += double(ry[row * n + i]) * ry[row * n + i];
    }
    EXPECT_NEAR(s1 / n, 0.0, 1e-6);
    EXPECT_NEAR(s2 / n, var / (var + 1e-6), 1e-5);
  }
  EXPECT_FALSE(ref::layer_norm(x, w, b, 3, 0.0f, y).ok());                      // rows of 3
  EXPECT_FALSE(ref::layer_norm(x, std::span(w).first(3), b, 4, 0.0f, y).ok());  // w size
  EXPECT_FALSE(ref::layer_norm(x, w, std::span(b).first(3), 4, 0.0f, y).ok());  // b size
  EXPECT_FALSE(ref::layer_norm(x, w, b, 4, 0.0f, std::span(y).first(4)).ok());  // y size
}

// kGeluErf against exact GELU values (0.5 x erfc(-x / sqrt(2)) in float64, Python's math.erfc:
// what torch.nn.functional.gelu gives in float64) and the identity gelu(x) - gelu(-x) = x; far
// from the tanh approximation.
TEST(RefOps, GeluErfIsTheExactGelu) {
  struct Case {
    float x;
    double want;
  };
  const Case cases[] = {{0.0f, 0.0},
                        {1.0f, 0.8413447460685429},
                        {-1.0f, -0.15865525393145707},
                        {0.5f, 0.34573123063700656},
                        {2.0f, 1.9544997361036416},
                        {-3.0f, -0.004049694094890287},
                        {-6.0f, -5.919525870226207e-09},
                        {10.0f, 10.0}};
  for (const auto& c : cases) {
    const float got = ref::gelu_erf(c.x);
    EXPECT_NEAR(got, c.want, std::abs(c.want) * 1e-6 + 1e-30) << c.x;
  }
  EXPECT_GT(std::abs(ref::gelu_erf(-1.5f) - ref::gelu_tanh(-1.5f)), 1e-4f);
  const auto x = random_vec(1000, 11);
  std::vector<float> y(x.size()), neg(x.size()), yn(x.size());
  ASSERT_TRUE(ref::unary(OpKind::kGeluErf, x, 1.0f, y).ok());
  for (size_t i = 0; i < x.size(); ++i) neg[i] = -x[i];
  ASSERT_TRUE(ref::unary(OpKind::kGeluErf, neg, 1.0f, yn).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], ref::gelu_erf(x[i]));
    ASSERT_NEAR(double(y[i]) - yn[i], x[i], 1e-6 * (1 + std::abs(x[i])));
  }
}

}  // namespace
}  // namespace geniex::graph::ref
