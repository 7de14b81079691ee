// Per-op work of the OpenCL backend: what it supports, and the kernel launch for each op.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/opencl/opencl_backend_impl.h"
#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::backends::opencl {
namespace {

using graph::Node;
using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

size_t sz(int64_t v) { return static_cast<size_t>(v); }
cl_int ci(int64_t v) { return static_cast<cl_int>(v); }

// Kernel-name suffix of the weight types with matmul / embedding kernels.
const char* type_suffix(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return "f32";
    case GgmlType::kF16: return "f16";
    case GgmlType::kQ4_0: return "q4_0";
    case GgmlType::kQ5_0: return "q5_0";
    case GgmlType::kQ8_0: return "q8_0";
    case GgmlType::kQ4_K: return "q4_k";
    case GgmlType::kQ6_K: return "q6_k";
    case GgmlType::kQ5_K: return "q5_k";
    case GgmlType::kBF16: return "bf16";
    case GgmlType::kIQ4_NL: return "iq4_nl";
    default: return nullptr;
  }
}

bool is_block_type(GgmlType t) {
  return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16;
}

// Whether input `in` can feed an F32 slot: F32 values, or a weight the host converts on upload.
bool f32_slot(const graph::Graph& g, NodeId in, std::string* why) {
  const Node& n = g.node(in);
  if (n.desc.dtype == GgmlType::kF32 || n.desc.dtype == GgmlType::kI32) return true;
  if (n.role == NodeRole::kWeight && quant::can_dequantize(n.desc.dtype)) return true;
  *why = "input node " + std::to_string(in) + " is " + n.desc.to_string() +
         " where F32 values are read (only weights are converted)";
  return false;
}

constexpr int64_t kAttentionMaxHead = 512;
constexpr int64_t kShortConvMaxTaps = 64;  // any L works; a bound on the per-token table

// The K / V type codes of attention.cl's kv_load, or -1.
int kv_type_code(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ8_0: return 2;
    case GgmlType::kQ4_0: return 3;
    default: return -1;
  }
}  // ATT_DMAX in attention.cl

}  // namespace

OpSupport OpenclBackend::supports(const graph::Graph& g, NodeId id) const {
  const Node& n = g.node(id);
  if (n.role != NodeRole::kOp) return {Support::kNative, {}};
  if (options_.disabled_ops.count(n.op) != 0) return {Support::kUnsupported, "disabled by options"};
  std::string why;
  auto desc = [&](size_t i) -> const graph::TensorDesc& { return g.node(n.inputs[i]).desc; };
  size_t first_f32 = 0;  // inputs before this index are checked by the kind itself
  switch (n.op) {
    case OpKind::kEmbedding:
    case OpKind::kMatMul: {
      const GgmlType t = desc(0).dtype;
      if (type_suffix(t) == nullptr) {
        return {Support::kUnsupported, std::string("no ") +
                                           (n.op == OpKind::kMatMul ? "matmul" : "embedding") +
                                           " kernel for " + std::string(ggml_type_name(t))};
      }
      first_f32 = 1;
      break;
    }
    case OpKind::kAttention: {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (kv_type_code(desc(i).dtype) < 0) {
          return {Support::kUnsupported, std::string(ggml_type_name(desc(i).dtype)) +
                                             " K/V is not supported (F32, F16, Q8_0, Q4_0)"};
        }
      }
      if (desc(0).ne[0] > kAttentionMaxHead || desc(2).ne[0] > kAttentionMaxHead) {
        return {Support::kUnsupported, "head size above " + std::to_string(kAttentionMaxHead)};
      }
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (i != 1 && i != 2 && !f32_slot(g, n.inputs[i], &why))
          return {Support::kUnsupported, why};
      }
      return {Support::kNative, {}};
    }
    case OpKind::kRope: {
      if (n.inputs.size() == 3) {  // the host reads freq_factors to build the cos / sin table
        const Node& f = g.node(n.inputs[2]);
        const bool host_f32 = f.desc.dtype == GgmlType::kF32 &&
                              (f.role == NodeRole::kWeight || f.role == NodeRole::kInput);
        if (!host_f32)
          return {Support::kUnsupported, "rope freq_factors must be an F32 weight or input"};
      }
      break;
    }
    case OpKind::kShortConv:
    case OpKind::kShortConvState: {
      const bool conv = n.op == OpKind::kShortConv;
      const size_t si = conv ? 2 : 1;  // state, then seq
      const int64_t taps = conv ? desc(1).ne[0] : (n.inputs.size() > si ? desc(si).ne[1] + 1 : 0);
      if (taps > kShortConvMaxTaps) {
        return {Support::kUnsupported,
                "short conv with more than " + std::to_string(kShortConvMaxTaps) + " taps"};
      }
      if (n.inputs.size() > si + 1 && g.node(n.inputs[si + 1]).role != NodeRole::kInput) {
        return {Support::kUnsupported, "short-conv seq must be an input (the host reads it)"};
      }
      break;
    }
    case OpKind::kCacheWrite: {
      if (kv_type_code(desc(0).dtype) < 0) {
        return {Support::kUnsupported, std::string(ggml_type_name(desc(0).dtype)) +
                                           " states are not supported (F32, F16, Q8_0, Q4_0)"};
      }
      first_f32 = 1;
      break;
    }
    default: break;
  }
  for (size_t i = first_f32; i < n.inputs.size(); ++i) {
    if (!f32_slot(g, n.inputs[i], &why)) return {Support::kUnsupported, why};
  }
  return {Support::kNative, {}};
}

std::span<const int32_t> OpenclBackend::host_i32(NodeId id) const { return host_i32_[id]; }

Result<cl_mem> OpenclBackend::f32_of(const graph::Graph& g, NodeId id) {
  if (g.node(id).role == NodeRole::kWeight) return weight_buffer(g, id, true);
  if (vals_[id].f32 == nullptr) {
    return internal_error("opencl: node " + std::to_string(id) + " has no F32 value");
  }
  return vals_[id].f32;
}

Status OpenclBackend::run_op(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  const auto& p = n.params;
  auto desc = [&](size_t i) -> const graph::TensorDesc& { return g.node(in[i]).desc; };
  const size_t count = sz(n.desc.nelements());
  const std::array<size_t, 3> wg{wg_, 1, 1};
  const std::array<size_t, 3> any{0, 0, 0};
  const std::array<size_t, 3> flat{(count + wg_ - 1) / wg_ * wg_, 1, 1};  // whole work-groups
  const cl_ulong n_elems = count;
  NodeVal& out = vals_[id];
  if (n.op == OpKind::kReshape) {
    GENIEX_ASSIGN_OR_RETURN(out.f32, f32_of(g, in[0]));
    out.raw = out.f32;
    return {};
  }
  if (n.op == OpKind::kCacheWrite) return op_cache_write(g, id);
  out.raw = out.f32 = plan_->mem[id];
  cl_mem y = out.f32;
  switch (n.op) {
    case OpKind::kMatMul: return op_matmul(g, id);
    case OpKind::kEmbedding: return op_embedding(g, id);
    case OpKind::kAttention: return op_attention(g, id);
    case OpKind::kRmsNorm: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      cl_mem w = dummy_.get();
      if (in.size() == 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, in[1]));
      }
      const cl_int has_w = in.size() == 2 ? 1 : 0;
      return launch("rms_norm_f32", {sz(desc(0).nrows()) * wg_, 1, 1}, wg, x, w, has_w, y,
                    ci(desc(0).ne[0]), cl_float{p.eps});
    }
    case OpKind::kLayerNorm: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      cl_mem w = dummy_.get(), b = dummy_.get();
      if (in.size() >= 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, in[1]));
      }
      if (in.size() == 3) {
        GENIEX_ASSIGN_OR_RETURN(b, f32_of(g, in[2]));
      }
      const cl_int flags = (in.size() >= 2 ? 1 : 0) | (in.size() == 3 ? 2 : 0);
      return launch("layer_norm_f32", {sz(desc(0).nrows()) * wg_, 1, 1}, wg, x, w, b, flags, y,
                    ci(desc(0).ne[0]), cl_float{p.eps});
    }
    case OpKind::kSoftmax: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      return launch("softmax_f32", {sz(desc(0).nrows()) * wg_, 1, 1}, wg, x, y, ci(desc(0).ne[0]),
                    cl_float{p.scale});
    }
    case OpKind::kRope: return op_rope(g, id);
    case OpKind::kShortConv:
    case OpKind::kShortConvState: return op_short_conv(g, id);
    case OpKind::kGelu:
    case OpKind::kGeluErf:
    case OpKind::kSilu:
    case OpKind::kScale:
    case OpKind::kSoftcap: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      const cl_int op = n.op == OpKind::kGelu      ? 0
                        : n.op == OpKind::kSilu    ? 1
                        : n.op == OpKind::kScale   ? 2
                        : n.op == OpKind::kGeluErf ? 4
                                                   : 3;
      return launch("unary_f32", flat, wg, x, y, op, cl_float{p.scale}, n_elems);
    }
    case OpKind::kGlu: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem gate, f32_of(g, in[0]));
      GENIEX_ASSIGN_OR_RETURN(cl_mem up, f32_of(g, in[1]));
      const cl_int act = p.glu == graph::GluActivation::kSilu ? 0 : 1;
      return launch("glu_f32", flat, wg, gate, up, y, act, n_elems);
    }
    case OpKind::kMul:
    case OpKind::kAdd: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem a, f32_of(g, in[0]));
      GENIEX_ASSIGN_OR_RETURN(cl_mem b, f32_of(g, in[1]));
      cl_int4 a_ne, b_ne;
      for (int i = 0; i < 4; ++i) {
        a_ne.s[i] = ci(desc(0).ne[sz(i)]);
        b_ne.s[i] = ci(desc(1).ne[sz(i)]);
        if (b_ne.s[i] != a_ne.s[i] && b_ne.s[i] != 1) {
          return invalid_argument("binary: b dims must equal a's or be 1");
        }
      }
      const cl_int mul = n.op == OpKind::kMul ? 1 : 0;
      return launch("binary_f32", flat, wg, a, b, y, mul, a_ne, b_ne, n_elems);
    }
    case OpKind::kHadamard: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      const auto blocks = static_cast<cl_ulong>(count / sz(p.hadamard_n));
      const float scale = 1.0f / std::sqrt(static_cast<float>(p.hadamard_n));
      const std::array<size_t, 3> per_block{(sz(blocks) + wg_ - 1) / wg_ * wg_, 1, 1};
      return launch("hadamard_f32", per_block, wg, x, y, cl_int{p.hadamard_n}, cl_float{scale},
                    blocks);
    }
    case OpKind::kGetRows: {
      GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
      const auto idx = host_i32(in[1]);
      for (int32_t r : idx) {
        if (r < 0 || r >= desc(0).ne[1]) {
          return out_of_range("row " + std::to_string(r) + " outside [0, " +
                              std::to_string(desc(0).ne[1]) + ")");
        }
      }
      return launch("get_rows_f32", {sz(desc(0).ne[0]), idx.size(), 1}, any, x, plan_->mem[in[1]],
                    y, ci(desc(0).ne[0]));
    }
    default: break;
  }
  return internal_error("opencl: unhandled op kind");
}

// RoPE. The cos / sin of the angles are computed on the host in double, as the reference and
// the CPU backend do (graph/ref_ops.cpp, backends/cpu/op_rope.cpp), and uploaded as a float
// table [T][n_dims / 2][4]; the device rotates in wide (double with fp64). f32 angles on the device
// would be off by ~pos * 6e-8 rad, enough to flip later Q8_0 activation roundings against the CPU.
Status OpenclBackend::op_rope(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  const auto& rp = n.params.rope;
  const auto& xd = g.node(in[0]).desc;
  GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, in[0]));
  const int64_t d = xd.ne[0];
  const int64_t n_dims = rp.n_dims == 0 ? d : rp.n_dims;
  if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > d) {
    return invalid_argument("rope: need even n_dims <= head_dim, got n_dims=" +
                            std::to_string(n_dims) + " head_dim=" + std::to_string(d));
  }
  const int64_t half = n_dims / 2;
  const auto pos = host_i32(in[1]);
  if (static_cast<int64_t>(pos.size()) != xd.ne[2]) {
    return invalid_argument("rope: " + std::to_string(pos.size()) + " positions for " +
                            std::to_string(xd.ne[2]) + " tokens");
  }
  std::span<const float> ff;
  if (in.size() == 3) {
    const Node& f = g.node(in[2]);
    if (f.desc.nelements() != half) {
      return invalid_argument("rope: freq_factors has " + std::to_string(f.desc.nelements()) +
                              " entries, expected " + std::to_string(half));
    }
    if (f.role == NodeRole::kWeight && f.desc.dtype == GgmlType::kF32) {
      const auto b = host_weight_[in[2]];
      ff = {reinterpret_cast<const float*>(b.data()), sz(half)};
    } else if (f.role == NodeRole::kInput) {
      ff = host_f32_[in[2]].first(sz(half));
    } else {
      return invalid_argument("rope: freq_factors must be an F32 weight or input");
    }
  }
  std::vector<double> powers(sz(half));
  for (int64_t i = 0; i < half; ++i) {
    powers[sz(i)] = std::pow(static_cast<double>(rp.base),
                             -2.0 * static_cast<double>(i) / static_cast<double>(n_dims));
  }
  // Each double is sent as a float pair (hi, lo = the rest), so a device with fp64 rotates with
  // ~48-bit cos / sin like the reference's double ones.
  rope_table_.resize(pos.size() * sz(half) * 4);
  for (size_t t = 0; t < pos.size(); ++t) {
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos[t]) * rp.freq_scale * powers[sz(i)];
      if (!ff.empty()) theta /= static_cast<double>(ff[sz(i)]);
      float* e = rope_table_.data() + (t * sz(half) + sz(i)) * 4;
      const double c = std::cos(theta), sn = std::sin(theta);
      e[0] = static_cast<float>(c);
      e[1] = static_cast<float>(c - static_cast<double>(e[0]));
      e[2] = static_cast<float>(sn);
      e[3] = static_cast<float>(sn - static_cast<double>(e[2]));
    }
  }
  const size_t bytes = rope_table_.size() * sizeof(float);
  if (rope_buf_.bytes() < bytes) {
    rope_buf_ = DeviceBuffer();
    GENIEX_ASSIGN_OR_RETURN(rope_buf_, alloc(bytes, "the RoPE table"));
  }
  // Staged: the in-order queue runs this write after the previous RoPE kernel read the buffer.
  GENIEX_TRY(upload(rope_buf_.get(), 0, rope_table_.data(), bytes, true));
  const cl_int neox = rp.mode == graph::RopeMode::kNeox ? 1 : 0;
  return launch("rope_f32", {sz(half + (d - n_dims)), sz(xd.ne[1]), sz(xd.ne[2])}, {0, 0, 0}, x,
                rope_buf_.get(), vals_[id].f32, ci(d), ci(n_dims), neox);
}

// LFM2's short conv and its state update. The history of each token (its slot's state columns,
// then the slot's earlier tokens in the batch: graph/ref_ops.cpp) is resolved on the host from
// seq into a table of sources per tap (short_conv_f32 in kernels/elementwise.cl: >= 0 a token,
// -1 zero, <= -2 a state column), so the kernels only gather and sum L products.
Status OpenclBackend::op_short_conv(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  const bool conv = n.op == OpKind::kShortConv;
  const size_t si = conv ? 2 : 1;
  const bool fresh = in.size() <= si;
  const auto& ud = g.node(in[0]).desc;
  const int64_t E = ud.ne[0], T = ud.ne[1];
  const int64_t H = fresh ? g.node(in[1]).desc.ne[0] - 1 : g.node(in[si]).desc.ne[1];
  const int64_t S = fresh ? 1 : g.node(in[si]).desc.ne[2];
  const int64_t L = H + 1;
  if (n.desc.nelements() == 0 || H < 1) return {};
  std::span<const int32_t> seq;
  if (!fresh) {
    seq = host_i32(in[si + 1]);
    if (static_cast<int64_t>(seq.size()) != T) {
      return invalid_argument("short_conv: " + std::to_string(seq.size()) + " slots for " +
                              std::to_string(T) + " tokens");
    }
    for (int32_t s : seq) {
      if (s >= S) {
        return out_of_range("short_conv: slot " + std::to_string(s) + " outside [0, " +
                            std::to_string(S) + ")");
      }
    }
  }
  // Each slot's last H history sources, oldest first, advanced token by token.
  std::vector<int32_t> hist(sz(S * H));
  for (int64_t i = 0; i < S * H; ++i) hist[sz(i)] = fresh ? -1 : static_cast<int32_t>(-2 - i);
  const size_t rows = conv ? sz(T) : 0;
  conv_table_.assign(conv ? rows * sz(L) : sz(S * H), -1);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t s = fresh ? 0 : seq[sz(t)];
    if (s < 0) continue;  // padding: conv_table_[t][L-1] stays -1, the output 0
    int32_t* h = hist.data() + sz(s) * sz(H);
    if (conv) {
      int32_t* row = conv_table_.data() + sz(t) * sz(L);
      for (int64_t i = 0; i < H; ++i) row[i] = h[i];
      row[H] = static_cast<int32_t>(t);
    }
    for (int64_t i = 0; i + 1 < H; ++i) h[i] = h[i + 1];
    h[H - 1] = static_cast<int32_t>(t);
  }
  if (!conv) conv_table_ = hist;
  const size_t bytes = conv_table_.size() * sizeof(int32_t);
  if (conv_buf_.bytes() < bytes) {
    conv_buf_ = DeviceBuffer();
    GENIEX_ASSIGN_OR_RETURN(conv_buf_, alloc(bytes, "the short-conv table"));
  }
  // Staged: the in-order queue runs this write after the previous short-conv kernel read it.
  GENIEX_TRY(upload(conv_buf_.get(), 0, conv_table_.data(), bytes, true));
  GENIEX_ASSIGN_OR_RETURN(cl_mem u, f32_of(g, in[0]));
  cl_mem state = dummy_.get();
  if (!fresh) {
    GENIEX_ASSIGN_OR_RETURN(state, f32_of(g, in[si]));
  }
  if (conv) {
    GENIEX_ASSIGN_OR_RETURN(cl_mem w, f32_of(g, in[1]));
    return launch("short_conv_f32", {sz(E), sz(T), 1}, {0, 0, 0}, u, w, state, conv_buf_.get(),
                  vals_[id].f32, ci(E), ci(L));
  }
  return launch("short_conv_state_f32", {sz(E), sz(S * H), 1}, {0, 0, 0}, u, state, conv_buf_.get(),
                vals_[id].f32, ci(E));
}

// Block weights follow the reference: the activation rows are quantized once on the device to
// the weight's vec-dot type (Q8_0 or Q8_K; the buffer is reused across MatMuls, the queue is
// in order), then the dot kernel forms integer block sums (kernels/matmul_q.cl).
Status OpenclBackend::op_matmul(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& w = g.node(n.inputs[0]);
  const GgmlType t = w.desc.dtype;
  const int64_t k = w.desc.ne[0], nn = w.desc.ne[1], m = g.node(n.inputs[1]).desc.nrows();
  cl_mem wm = nullptr;
  if (w.role == NodeRole::kWeight) {
    GENIEX_ASSIGN_OR_RETURN(wm, weight_buffer(g, n.inputs[0], false));
  } else {
    wm = vals_[n.inputs[0]].raw;
  }
  GENIEX_ASSIGN_OR_RETURN(cl_mem x, f32_of(g, n.inputs[1]));
  const cl_ulong row_bytes = *ggml_row_bytes(t, static_cast<uint64_t>(k));
  constexpr int64_t kRowsPerGroup = 4;  // MT in matmul.cl
  const std::string name = std::string("matmul_") + type_suffix(t);
  const std::array<size_t, 3> global{sz(nn) * wg_, sz((m + kRowsPerGroup - 1) / kRowsPerGroup), 1};
  if (!is_block_type(t)) {
    return launch(name.c_str(), global, {wg_, 1, 1}, wm, row_bytes, x, vals_[id].f32, ci(k), ci(nn),
                  ci(m));
  }
  const bool q8k = quant::vec_dot_type(t) == GgmlType::kQ8_K;
  const int64_t block = q8k ? 256 : 32;
  if (k % block != 0) {
    return invalid_argument("matmul: K=" + std::to_string(k) + " is not a multiple of " +
                            std::to_string(block) + " for " + std::string(ggml_type_name(t)));
  }
  // Layout (matmul_q.cl): int8 quants [m][k], scales (f16 / f32) per block, Q8_K's 16-sums.
  const size_t quants = sz(m * k);
  const cl_ulong d_off = (quants + 15) / 16 * 16;
  const size_t blocks = sz(m * (k / block));
  const cl_ulong bs_off = d_off + (blocks * (q8k ? 4 : 2) + 15) / 16 * 16;
  const size_t bytes = bs_off + (q8k ? sz(m * (k / 16)) * 2 : 0);
  if (act_q_.bytes() < bytes) {
    act_q_ = DeviceBuffer();
    GENIEX_ASSIGN_OR_RETURN(act_q_, alloc(bytes, "quantized matmul activations"));
  }
  cl_mem aq = act_q_.get();
  if (q8k) {
    GENIEX_TRY(launch("quantize_q8_k_rows", {sz(k / 256), sz(m), 1}, {0, 0, 0}, x, aq, d_off,
                      bs_off, ci(k)));
    return launch(name.c_str(), global, {wg_, 1, 1}, wm, row_bytes, aq, d_off, bs_off,
                  vals_[id].f32, ci(k), ci(nn), ci(m));
  }
  GENIEX_TRY(launch("quantize_q8_0_rows", {sz(k / 32), sz(m), 1}, {0, 0, 0}, x, aq, d_off, ci(k)));
  return launch(name.c_str(), global, {wg_, 1, 1}, wm, row_bytes, aq, d_off, vals_[id].f32, ci(k),
                ci(nn), ci(m));
}

Status OpenclBackend::op_embedding(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& table = g.node(n.inputs[0]);
  const GgmlType t = table.desc.dtype;
  const int64_t e = table.desc.ne[0], vocab = table.desc.ne[1];
  const auto ids = host_i32(n.inputs[1]);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return out_of_range("embedding: token id " + std::to_string(ids[i]) + " at index " +
                          std::to_string(i) + " is outside [0, " + std::to_string(vocab) + ")");
    }
  }
  cl_mem tm = nullptr;
  if (table.role == NodeRole::kWeight) {
    GENIEX_ASSIGN_OR_RETURN(tm, weight_buffer(g, n.inputs[0], false));
  } else {
    tm = vals_[n.inputs[0]].raw;
  }
  const cl_ulong row_bytes = *ggml_row_bytes(t, static_cast<uint64_t>(e));
  const std::string name = std::string("embed_") + type_suffix(t);
  const size_t units = is_block_type(t) ? sz(e / 32) : sz(e);
  return launch(name.c_str(), {units, ids.size(), 1}, {0, 0, 0}, tm, row_bytes,
                plan_->mem[n.inputs[1]], vals_[id].f32, ci(e));
}

Status OpenclBackend::op_attention(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  auto desc = [&](size_t i) -> const graph::TensorDesc& { return g.node(in[i]).desc; };
  graph::ref::AttentionDims d{desc(0).ne[0], desc(2).ne[0], desc(0).ne[1], desc(1).ne[1],
                              desc(0).ne[2], desc(4).ne[0], desc(1).ne[2]};
  graph::ref::AttentionPaging paging;
  if (in.size() >= 6) paging.k_rows = host_i32(in[5]);
  if (in.size() >= 7) paging.q_seg = host_i32(in[6]);
  if (d.n_head % d.n_kv_head != 0) {
    return invalid_argument("attention: n_head must be a multiple of n_kv_head");
  }
  GENIEX_TRY(graph::ref::check_attention_paging(d, paging));
  GENIEX_ASSIGN_OR_RETURN(cl_mem q, f32_of(g, in[0]));
  cl_mem kv[2] = {nullptr, nullptr};
  for (size_t i = 1; i <= 2; ++i) {
    if (g.node(in[i]).role == NodeRole::kWeight) {
      GENIEX_ASSIGN_OR_RETURN(kv[i - 1], weight_buffer(g, in[i], false));
    } else {
      GENIEX_TRY(upload_state_rows(g, in[i], paging.k_rows, d.n_kv));
      kv[i - 1] = vals_[in[i]].raw;
    }
  }
  const auto& a = n.params.attn;
  const cl_int has_rows = paging.k_rows.empty() ? 0 : 1;
  const cl_int has_seg = paging.q_seg.empty() ? 0 : 1;
  const cl_mem rows = has_rows ? plan_->mem[in[5]] : dummy_.get();
  const cl_mem seg = has_seg ? plan_->mem[in[6]] : dummy_.get();
  const cl_int k_type = kv_type_code(desc(1).dtype);
  const cl_int v_type = kv_type_code(desc(2).dtype);
  return launch("attention_f32", {sz(d.n_head) * wg_, sz(d.n_q), 1}, {wg_, 1, 1}, q, kv[0], kv[1],
                plan_->mem[in[3]], plan_->mem[in[4]], rows, has_rows, seg, has_seg, vals_[id].f32,
                ci(d.head_dim), ci(d.head_dim_v), ci(d.n_kv_head), ci(d.n_kv), k_type, v_type,
                cl_float{a.scale}, cl_int{a.causal ? 1 : 0}, cl_int{a.sliding_window},
                cl_float{a.softcap});
}

// Q8_0 / Q4_0 states are quantized on the host with quant::quantize_row (byte-identical to the
// reference): the batch's rows are read back as f32 and only the host state is written. The
// device copy of those rows is refreshed from the host before an attention reads them.
Status OpenclBackend::cache_write_blocks(const graph::Graph& g, NodeId id, cl_mem src,
                                         std::span<const int32_t> slots) {
  const Node& n = g.node(id);
  const NodeId st = n.inputs[0];
  NodeId base = st;
  while (g.node(base).role == NodeRole::kOp) base = g.node(base).inputs[0];
  const auto& sd = g.node(st).desc;
  const int64_t row = sd.ne[0] * sd.ne[1];
  const size_t row_bytes = *ggml_row_bytes(sd.dtype, static_cast<uint64_t>(row));
  std::vector<float> rows(slots.size() * sz(row));
  const cl_int err = api_->clEnqueueReadBuffer(
      queue_.get(), src, CL_TRUE, 0, rows.size() * sizeof(float), rows.data(), 0, nullptr, nullptr);
  if (err != CL_SUCCESS) return cl_status(err, "reading the rows to quantize");
  stats_.bytes_downloaded += rows.size() * sizeof(float);
  run_down_ += rows.size() * sizeof(float);
  const std::span<uint8_t> host = host_state_[base];
  for (size_t t = 0; t < slots.size(); ++t) {
    GENIEX_TRY(quant::quantize_row(sd.dtype,
                                   std::span<const float>(rows).subspan(t * sz(row), sz(row)),
                                   host.subspan(sz(slots[t]) * row_bytes, row_bytes)));
  }
  vals_[id] = vals_[st];
  return {};
}

// Writes the rows on the device, then reads exactly those rows back into the host state (the
// truth); the read completes before the next hook or host-state read (finish_writebacks).
Status OpenclBackend::op_cache_write(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const NodeId st = n.inputs[0];
  const NodeId base = [&] {
    NodeId b = st;
    while (g.node(b).role == NodeRole::kOp) b = g.node(b).inputs[0];
    return b;
  }();
  const auto& sd = g.node(st).desc;
  const auto slots = host_i32(n.inputs[2]);
  for (int32_t s : slots) {  // all checked before anything is written
    if (s < 0 || s >= sd.ne[2]) {
      return out_of_range("slot " + std::to_string(s) + " outside [0, " + std::to_string(sd.ne[2]) +
                          ")");
    }
  }
  GENIEX_ASSIGN_OR_RETURN(cl_mem src, f32_of(g, n.inputs[1]));
  const int64_t row = sd.ne[0] * sd.ne[1];
  if (sd.dtype != GgmlType::kF32 && sd.dtype != GgmlType::kF16) {
    return cache_write_blocks(g, id, src, slots);
  }
  cl_mem state = vals_[st].raw;
  const cl_int f16 = sd.dtype == GgmlType::kF16 ? 1 : 0;
  GENIEX_TRY(launch("cache_write", {sz(row), slots.size(), 1}, {0, 0, 0}, src, state,
                    plan_->mem[n.inputs[2]], ci(row), f16));
  const size_t row_bytes = *ggml_row_bytes(sd.dtype, static_cast<uint64_t>(row));
  uint8_t* host = host_state_[base].data();
  for (int32_t s : slots) {
    const size_t off = sz(s) * row_bytes;
    const cl_int err = api_->clEnqueueReadBuffer(queue_.get(), state, CL_FALSE, off, row_bytes,
                                                 host + off, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) return cl_status(err, "reading back KV rows");
    stats_.bytes_downloaded += row_bytes;
    run_down_ += row_bytes;
  }
  writebacks_pending_ = writebacks_pending_ || !slots.empty();
  vals_[id] = vals_[st];
  return {};
}

}  // namespace geniex::backends::opencl
