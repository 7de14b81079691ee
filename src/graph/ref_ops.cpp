#include "graph/ref_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "quant/quant.h"

namespace geniex::graph::ref {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

Status check_size(const char* op, const char* what, size_t got, int64_t want) {
  if (want < 0 || got != sz(want)) {
    return invalid_argument(std::string(op) + ": " + what + " has " + std::to_string(got) +
                            " elements, expected " + std::to_string(want));
  }
  return {};
}

}  // namespace

Status matmul(GgmlType wtype, std::span<const uint8_t> w, int64_t k, int64_t n,
              std::span<const float> x, int64_t m, std::span<float> y) {
  if (k <= 0 || n <= 0 || m <= 0) return invalid_argument("matmul: K, N, M must be positive");
  if (!quant::can_vec_dot(wtype)) {
    return unimplemented("matmul: no dot product for weight type " +
                         std::string(ggml_type_name(wtype)));
  }
  const GgmlType at = quant::vec_dot_type(wtype);
  const auto w_row = ggml_row_bytes(wtype, static_cast<uint64_t>(k));
  const auto a_row = ggml_row_bytes(at, static_cast<uint64_t>(k));
  if (!w_row || !a_row) {
    return invalid_argument("matmul: K=" + std::to_string(k) + " is not a multiple of the " +
                            std::string(ggml_type_name(wtype)) + " block size");
  }
  if (w.size() != *w_row * sz(n)) {
    return invalid_argument("matmul: weight has " + std::to_string(w.size()) + " bytes, expected " +
                            std::to_string(*w_row * sz(n)) + " for " +
                            std::string(ggml_type_name(wtype)) + "[" + std::to_string(k) + ", " +
                            std::to_string(n) + "]");
  }
  GENIEX_TRY(check_size("matmul", "x", x.size(), k * m));
  GENIEX_TRY(check_size("matmul", "y", y.size(), n * m));
  std::vector<uint8_t> act(*a_row);
  for (int64_t mi = 0; mi < m; ++mi) {
    // Quantize the activation row once, as ggml does, then one integer dot per output.
    GENIEX_TRY(quant::quantize_row(at, x.subspan(sz(mi * k), sz(k)), act));
    for (int64_t ni = 0; ni < n; ++ni) {
      GENIEX_ASSIGN_OR_RETURN(
          float v, quant::vec_dot_ref(wtype, w.subspan(sz(ni) * *w_row, *w_row), act, sz(k)));
      y[sz(mi * n + ni)] = v;
    }
  }
  return {};
}

Status embedding(GgmlType type, std::span<const uint8_t> table, int64_t n_embd, int64_t n_vocab,
                 std::span<const int32_t> ids, std::span<float> out) {
  if (n_embd <= 0 || n_vocab <= 0) return invalid_argument("embedding: empty table");
  const auto row = ggml_row_bytes(type, static_cast<uint64_t>(n_embd));
  if (!row) return invalid_argument("embedding: n_embd is not a multiple of the block size");
  if (table.size() != *row * sz(n_vocab)) {
    return invalid_argument("embedding: table has " + std::to_string(table.size()) +
                            " bytes, expected " + std::to_string(*row * sz(n_vocab)));
  }
  GENIEX_TRY(check_size("embedding", "out", out.size(), n_embd * static_cast<int64_t>(ids.size())));
  for (size_t t = 0; t < ids.size(); ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= n_vocab) {
      return out_of_range("embedding: token id " + std::to_string(id) + " at index " +
                          std::to_string(t) + " is outside [0, " + std::to_string(n_vocab) + ")");
    }
    GENIEX_TRY(quant::dequantize_row(type, table.subspan(sz(id) * *row, *row),
                                     out.subspan(t * sz(n_embd), sz(n_embd))));
  }
  return {};
}

Status rms_norm(std::span<const float> x, std::span<const float> w, int64_t n, float eps,
                std::span<float> y) {
  if (n <= 0 || x.size() % sz(n) != 0) return invalid_argument("rms_norm: x is not rows of n");
  if (!w.empty()) GENIEX_TRY(check_size("rms_norm", "w", w.size(), n));
  GENIEX_TRY(check_size("rms_norm", "y", y.size(), static_cast<int64_t>(x.size())));
  for (size_t r = 0; r < x.size() / sz(n); ++r) {
    const float* xr = x.data() + r * sz(n);
    rms_norm_row(xr, w.empty() ? nullptr : w.data(), n, rms_sum_squares(xr, n), eps,
                 y.data() + r * sz(n));
  }
  return {};
}

double rms_sum_squares(const float* x, int64_t n) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  return ss;
}

void rms_norm_row(const float* x, const float* w, int64_t n, double sum_sq, float eps, float* y) {
  const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) {
    double v = x[i] * inv;
    if (w != nullptr) v *= static_cast<double>(w[i]);
    y[i] = static_cast<float>(v);
  }
}

Status layer_norm(std::span<const float> x, std::span<const float> w, std::span<const float> b,
                  int64_t n, float eps, std::span<float> y) {
  if (n <= 0 || x.size() % sz(n) != 0) return invalid_argument("layer_norm: x is not rows of n");
  if (!w.empty()) GENIEX_TRY(check_size("layer_norm", "w", w.size(), n));
  if (!b.empty()) GENIEX_TRY(check_size("layer_norm", "b", b.size(), n));
  GENIEX_TRY(check_size("layer_norm", "y", y.size(), static_cast<int64_t>(x.size())));
  for (size_t r = 0; r < x.size() / sz(n); ++r) {
    const float* xr = x.data() + r * sz(n);
    const double mean = layer_norm_sum(xr, n) / static_cast<double>(n);
    layer_norm_row(xr, w.empty() ? nullptr : w.data(), b.empty() ? nullptr : b.data(), n, mean,
                   layer_norm_sum_sq_dev(xr, n, mean), eps, y.data() + r * sz(n));
  }
  return {};
}

double layer_norm_sum(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

double layer_norm_sum_sq_dev(const float* x, int64_t n, double mean) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    ss += d * d;
  }
  return ss;
}

void layer_norm_row(const float* x, const float* w, const float* b, int64_t n, double mean,
                    double sum_sq_dev, float eps, float* y) {
  const double inv =
      1.0 / std::sqrt(sum_sq_dev / static_cast<double>(n) + static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) {
    double v = (x[i] - mean) * inv;
    if (w != nullptr) v *= static_cast<double>(w[i]);
    if (b != nullptr) v += static_cast<double>(b[i]);
    y[i] = static_cast<float>(v);
  }
}

Status softmax(std::span<const float> x, int64_t n, float scale, std::span<float> y) {
  if (n <= 0 || x.size() % sz(n) != 0) return invalid_argument("softmax: x is not rows of n");
  GENIEX_TRY(check_size("softmax", "y", y.size(), static_cast<int64_t>(x.size())));
  std::vector<double> e(sz(n));
  for (size_t r = 0; r < x.size() / sz(n); ++r) {
    const float* xr = x.data() + r * sz(n);
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(xr[i]) * scale);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(xr[i]) * scale;
      e[sz(i)] = v == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(v - mx);
      sum += e[sz(i)];
    }
    for (int64_t i = 0; i < n; ++i) {
      y[r * sz(n) + sz(i)] = sum > 0.0 ? static_cast<float>(e[sz(i)] / sum) : 0.0f;
    }
  }
  return {};
}

Status rope(std::span<const float> x, int64_t head_dim, int64_t n_head, int64_t n_tokens,
            std::span<const int32_t> pos, const RopeParams& params,
            std::span<const float> freq_factors, std::span<float> y) {
  const int64_t n_dims = params.n_dims == 0 ? head_dim : params.n_dims;
  if (head_dim <= 0 || n_head <= 0 || n_tokens <= 0 || n_dims <= 0 || n_dims % 2 != 0 ||
      n_dims > head_dim) {
    return invalid_argument("rope: need positive sizes and even n_dims <= head_dim, got n_dims=" +
                            std::to_string(n_dims) + " head_dim=" + std::to_string(head_dim));
  }
  GENIEX_TRY(check_size("rope", "x", x.size(), head_dim * n_head * n_tokens));
  GENIEX_TRY(check_size("rope", "y", y.size(), head_dim * n_head * n_tokens));
  GENIEX_TRY(check_size("rope", "pos", pos.size(), n_tokens));
  if (!freq_factors.empty())
    GENIEX_TRY(check_size("rope", "freq_factors", freq_factors.size(), n_dims / 2));
  const int64_t half = n_dims / 2;
  std::vector<double> cs(sz(half)), sn(sz(half));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos[sz(t)]) * params.freq_scale *
                     std::pow(static_cast<double>(params.base),
                              -2.0 * static_cast<double>(i) / static_cast<double>(n_dims));
      if (!freq_factors.empty()) theta /= static_cast<double>(freq_factors[sz(i)]);
      cs[sz(i)] = std::cos(theta);
      sn[sz(i)] = std::sin(theta);
    }
    for (int64_t h = 0; h < n_head; ++h) {
      const size_t base = sz((t * n_head + h) * head_dim);
      const float* xr = x.data() + base;
      float* yr = y.data() + base;
      for (int64_t i = n_dims; i < head_dim; ++i) yr[i] = xr[i];
      for (int64_t i = 0; i < half; ++i) {
        const int64_t i0 = params.mode == RopeMode::kNormal ? 2 * i : i;
        const int64_t i1 = params.mode == RopeMode::kNormal ? 2 * i + 1 : i + half;
        const double a = xr[i0], b = xr[i1];
        yr[i0] = static_cast<float>(a * cs[sz(i)] - b * sn[sz(i)]);
        yr[i1] = static_cast<float>(a * sn[sz(i)] + b * cs[sz(i)]);
      }
    }
  }
  return {};
}

float gelu_tanh(float x) {
  const double v = x;
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return static_cast<float>(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
}

float gelu_erf(float x) {
  const double v = x;
  return static_cast<float>(0.5 * v * std::erfc(-v / std::sqrt(2.0)));
}

float silu(float x) {
  const double v = x;
  return static_cast<float>(v / (1.0 + std::exp(-v)));
}

Status unary(OpKind kind, std::span<const float> x, float scale, std::span<float> y) {
  GENIEX_TRY(check_size("unary", "y", y.size(), static_cast<int64_t>(x.size())));
  for (size_t i = 0; i < x.size(); ++i) {
    switch (kind) {
      case OpKind::kGelu: y[i] = gelu_tanh(x[i]); break;
      case OpKind::kGeluErf: y[i] = gelu_erf(x[i]); break;
      case OpKind::kSilu: y[i] = silu(x[i]); break;
      case OpKind::kScale: y[i] = x[i] * scale; break;
      case OpKind::kSoftcap:
        y[i] = static_cast<float>(static_cast<double>(scale) *
                                  std::tanh(static_cast<double>(x[i]) / scale));
        break;
      default: return invalid_argument("unary: " + std::string(op_name(kind)) + " is not unary");
    }
  }
  return {};
}

Status short_conv(std::span<const float> u, int64_t n_embd, int64_t n_tokens,
                  std::span<const float> w, int64_t n_taps, std::span<const float> state,
                  std::span<const int32_t> seq, std::span<float> conv, std::span<float> new_state) {
  const int64_t E = n_embd, T = n_tokens, L = n_taps, H = n_taps - 1;  // H: state columns
  GENIEX_TRY(check_size("short_conv", "u", u.size(), E * T));
  GENIEX_TRY(check_size("short_conv", "w", w.size(), E * L));
  if (!conv.empty()) GENIEX_TRY(check_size("short_conv", "conv", conv.size(), E * T));
  const bool fresh = state.empty();
  const int64_t S = fresh ? 1 : static_cast<int64_t>(state.size()) / std::max<int64_t>(1, E * H);
  if (!fresh) {
    GENIEX_TRY(check_size("short_conv", "state", state.size(), E * H * S));
    GENIEX_TRY(check_size("short_conv", "seq", seq.size(), T));
  }
  if (!new_state.empty())
    GENIEX_TRY(check_size("short_conv", "new_state", new_state.size(), E * H * S));
  // Each slot's tokens in batch order.
  std::vector<std::vector<int64_t>> tokens(static_cast<size_t>(S));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t s = fresh ? 0 : seq[static_cast<size_t>(t)];
    if (s < 0) continue;
    if (s >= S) {
      return out_of_range("short_conv: slot " + std::to_string(s) + " outside [0, " +
                          std::to_string(S) + ")");
    }
    tokens[static_cast<size_t>(s)].push_back(t);
  }
  if (!conv.empty()) std::fill(conv.begin(), conv.end(), 0.0f);
  for (int64_t s = 0; s < S; ++s) {
    const auto& list = tokens[static_cast<size_t>(s)];
    const auto n = static_cast<int64_t>(list.size());
    // Element c of column i of state ++ u (this slot's tokens).
    auto hist = [&](int64_t c, int64_t i) -> double {
      if (i < H) return fresh ? 0.0 : state[static_cast<size_t>((s * H + i) * E + c)];
      return u[static_cast<size_t>(list[static_cast<size_t>(i - H)] * E + c)];
    };
    for (int64_t c = 0; c < E; ++c) {
      if (!conv.empty()) {
        for (int64_t i = 0; i < n; ++i) {
          double acc = 0.0;
          for (int64_t j = 0; j < L; ++j) acc += w[static_cast<size_t>(c * L + j)] * hist(c, i + j);
          conv[static_cast<size_t>(list[static_cast<size_t>(i)] * E + c)] = static_cast<float>(acc);
        }
      }
      if (!new_state.empty()) {
        for (int64_t k = 0; k < H; ++k) {
          new_state[static_cast<size_t>((s * H + k) * E + c)] = static_cast<float>(hist(c, n + k));
        }
      }
    }
  }
  return {};
}

Status hadamard(std::span<const float> x, int32_t n, std::span<float> y) {
  GENIEX_TRY(check_size("hadamard", "y", y.size(), static_cast<int64_t>(x.size())));
  if (n < 1 || (n & (n - 1)) != 0 || x.size() % static_cast<size_t>(n) != 0) {
    return invalid_argument("hadamard: n = " + std::to_string(n) +
                            " is not a power of two dividing " + std::to_string(x.size()));
  }
  const auto w = static_cast<size_t>(n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(n));
  std::vector<double> b(w);
  for (size_t r = 0; r < x.size(); r += w) {
    for (size_t j = 0; j < w; ++j) b[j] = x[r + j];
    for (size_t len = 1; len < w; len <<= 1) {
      for (size_t i = 0; i < w; i += 2 * len) {
        for (size_t j = i; j < i + len; ++j) {
          const double u = b[j], v = b[j + len];
          b[j] = u + v;
          b[j + len] = u - v;
        }
      }
    }
    for (size_t j = 0; j < w; ++j) y[r + j] = static_cast<float>(b[j] * scale);
  }
  return {};
}

Status glu(GluActivation act, std::span<const float> gate, std::span<const float> up,
           std::span<float> y) {
  GENIEX_TRY(check_size("glu", "up", up.size(), static_cast<int64_t>(gate.size())));
  GENIEX_TRY(check_size("glu", "y", y.size(), static_cast<int64_t>(gate.size())));
  for (size_t i = 0; i < gate.size(); ++i) {
    const float a = act == GluActivation::kSilu ? silu(gate[i]) : gelu_tanh(gate[i]);
    y[i] = a * up[i];
  }
  return {};
}

Status binary(OpKind kind, std::span<const float> a, const std::array<int64_t, 4>& a_ne,
              std::span<const float> b, const std::array<int64_t, 4>& b_ne, std::span<float> y) {
  if (kind != OpKind::kAdd && kind != OpKind::kMul) {
    return invalid_argument("binary: " + std::string(op_name(kind)) + " is not Add or Mul");
  }
  for (size_t i = 0; i < 4; ++i) {
    if (a_ne[i] < 1 || (b_ne[i] != a_ne[i] && b_ne[i] != 1)) {
      return invalid_argument("binary: b dims must equal a's or be 1");
    }
  }
  const int64_t na = a_ne[0] * a_ne[1] * a_ne[2] * a_ne[3];
  GENIEX_TRY(check_size("binary", "a", a.size(), na));
  GENIEX_TRY(check_size("binary", "b", b.size(), b_ne[0] * b_ne[1] * b_ne[2] * b_ne[3]));
  GENIEX_TRY(check_size("binary", "y", y.size(), na));
  size_t idx = 0;
  for (int64_t i3 = 0; i3 < a_ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < a_ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < a_ne[1]; ++i1) {
        for (int64_t i0 = 0; i0 < a_ne[0]; ++i0, ++idx) {
          const int64_t j =
              (((i3 % b_ne[3]) * b_ne[2] + i2 % b_ne[2]) * b_ne[1] + i1 % b_ne[1]) * b_ne[0] +
              i0 % b_ne[0];
          y[idx] = kind == OpKind::kAdd ? a[idx] + b[sz(j)] : a[idx] * b[sz(j)];
        }
      }
    }
  }
  return {};
}

}  // namespace geniex::graph::ref
