// Execute step of the reference NPU: binds the host buffers, then runs the ops in order. MatMul
// is int8 (int8_matmul.cpp); every other op computes on f32 storage with GenieX's scalar
// reference ops, reading and writing F16/F32 KV states in place.
#include <algorithm>
#include <cstring>

#include "backends/npu/ref_plugin/ref_device.h"
#include "core/fp16.h"
#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::npu_ref {
namespace {

using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

size_t sz(int64_t v) { return static_cast<size_t>(v); }

// What each node holds during one execute.
struct Vals {
  std::vector<const float*> f;    // F32 values (inputs, weight copies, op results, F32 states)
  std::vector<const int32_t*> i;  // I32 inputs
  std::vector<uint8_t*> state;    // state bytes (state nodes and the CacheWrites aliasing them)
  std::vector<GgmlType> state_type;
  std::vector<float*> out;  // where outputs go
};

Status bind(Compiled& c, const geniex_npu_buffer* buffers, uint32_t n, Vals& v) {
  const graph::Graph& g = c.g;
  v.f.assign(g.size(), nullptr);
  v.i.assign(g.size(), nullptr);
  v.state.assign(g.size(), nullptr);
  v.state_type.assign(g.size(), GgmlType::kF32);
  v.out.assign(g.size(), nullptr);
  if (n > 0 && buffers == nullptr) return invalid_argument("null buffer array");
  for (uint32_t k = 0; k < n; ++k) {
    const geniex_npu_buffer& b = buffers[k];
    auto it = c.node_of.find(b.tensor_id);
    if (it == c.node_of.end() || b.data == nullptr) {
      return invalid_argument("buffer for unknown tensor " + std::to_string(b.tensor_id) +
                              " or with no data");
    }
    const NodeId id = it->second;
    const auto& node = g.node(id);
    const uint64_t elems = static_cast<uint64_t>(node.desc.nelements());
    const std::string what = "tensor " + std::to_string(b.tensor_id) + " '" + node.name + "'";
    if (node.role == NodeRole::kInput) {
      if (b.bytes != elems * 4) return invalid_argument(what + ": wrong input size");
      if (node.desc.dtype == GgmlType::kI32) {
        v.i[id] = static_cast<const int32_t*>(b.data);
      } else {
        v.f[id] = static_cast<const float*>(b.data);
      }
    } else if (node.role == NodeRole::kState) {
      const uint64_t need =
          *ggml_row_bytes(node.desc.dtype, static_cast<uint64_t>(node.desc.ne[0])) *
          static_cast<uint64_t>(node.desc.nrows());
      if (b.bytes < need) return invalid_argument(what + ": state buffer too small");
      v.state[id] = static_cast<uint8_t*>(b.data);
      v.state_type[id] = node.desc.dtype;
      if (node.desc.dtype == GgmlType::kF32) v.f[id] = static_cast<const float*>(b.data);
    } else if (std::find(c.outputs.begin(), c.outputs.end(), id) != c.outputs.end()) {
      if (b.bytes != elems * 4) return invalid_argument(what + ": wrong output size");
      v.out[id] = static_cast<float*>(b.data);
    } else {
      return invalid_argument(what + " is neither an input, a state nor an output");
    }
  }
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto& node = g.node(id);
    const bool missing =
        (node.role == NodeRole::kInput && v.f[id] == nullptr && v.i[id] == nullptr) ||
        (node.role == NodeRole::kState && v.state[id] == nullptr);
    if (missing) {
      return invalid_argument("tensor " + std::to_string(c.tensor_id[id]) + " '" + node.name +
                              "' is not bound");
    }
    if (node.role == NodeRole::kWeight) v.f[id] = c.f32[id].data();  // empty for int8 weights
  }
  for (NodeId id : c.outputs) {
    if (v.out[id] == nullptr) {
      return invalid_argument("output tensor " + std::to_string(c.tensor_id[id]) + " is not bound");
    }
  }
  return {};
}

std::span<const float> f32(const Compiled& c, const Vals& v, NodeId id) {
  return {v.f[id], sz(c.g.node(id).desc.nelements())};
}
std::span<const int32_t> i32(const Compiled& c, const Vals& v, NodeId id) {
  return {v.i[id], sz(c.g.node(id).desc.nelements())};
}

// Copies rows `rows[j]` (or j without rows) of K or V (node `id`: F32 values or an F16/F32
// state) into `dst` as f32, checking each row.
Status gather(const Compiled& c, const Vals& v, NodeId id, std::span<const int32_t> rows,
              int64_t n_keys, float* dst) {
  const auto& d = c.g.node(id).desc;
  const int64_t row = d.ne[0] * d.ne[1];
  for (int64_t j = 0; j < n_keys; ++j) {
    const int64_t r = rows.empty() ? j : rows[sz(j)];
    if (r < 0 || r >= d.ne[2]) {
      return out_of_range("k_rows entry " + std::to_string(j) + " = " + std::to_string(r) +
                          " outside [0, " + std::to_string(d.ne[2]) + ")");
    }
    float* o = dst + sz(j * row);
    if (v.state[id] != nullptr && v.state_type[id] == GgmlType::kF16) {
      const uint8_t* src = v.state[id] + sz(r * row) * 2;
      for (int64_t e = 0; e < row; ++e) {
        uint16_t h = 0;
        std::memcpy(&h, src + sz(e) * 2, 2);
        o[e] = fp16_to_fp32(h);
      }
    } else {
      std::copy_n(v.f[id] + sz(r * row), row, o);
    }
  }
  return {};
}

Status attention(Compiled& c, const Vals& v, NodeId id, float* out) {
  const auto& n = c.g.node(id);
  const auto& in = n.inputs;
  const auto& q = c.g.node(in[0]).desc;
  const auto& k = c.g.node(in[1]).desc;
  const auto& vd = c.g.node(in[2]).desc;
  const int64_t tk = c.g.node(in[4]).desc.ne[0];
  std::span<const int32_t> rows = in.size() >= 6 ? i32(c, v, in[5]) : std::span<const int32_t>();
  float* kc = c.kv_scratch.data();
  float* vc = kc + sz(tk * k.ne[0] * k.ne[1]);
  GENIEX_TRY(gather(c, v, in[1], rows, tk, kc));
  GENIEX_TRY(gather(c, v, in[2], rows, tk, vc));
  graph::ref::AttentionDims dims{q.ne[0], vd.ne[0], q.ne[1], k.ne[1], q.ne[2], tk, tk};
  graph::ref::AttentionPaging paging;
  if (!rows.empty()) paging.k_rows = std::span<const int32_t>(c.iota).first(sz(tk));
  if (in.size() >= 7) paging.q_seg = i32(c, v, in[6]);
  return graph::ref::attention(
      f32(c, v, in[0]), {kc, sz(tk * k.ne[0] * k.ne[1])}, {vc, sz(tk * vd.ne[0] * vd.ne[1])}, dims,
      i32(c, v, in[3]), i32(c, v, in[4]), n.params.attn, paging, {out, sz(n.desc.nelements())});
}

Status cache_write(const Compiled& c, Vals& v, NodeId id) {
  const auto& n = c.g.node(id);
  const NodeId st = n.inputs[0];
  const auto& d = c.g.node(st).desc;
  const auto slots = i32(c, v, n.inputs[2]);
  const auto src = f32(c, v, n.inputs[1]);
  for (int32_t s : slots) {  // every slot is checked before anything is written
    if (s < 0 || s >= d.ne[2]) {
      return out_of_range("slot " + std::to_string(s) + " outside [0, " + std::to_string(d.ne[2]) +
                          ")");
    }
  }
  const int64_t row = d.ne[0] * d.ne[1];
  const size_t row_bytes = *ggml_row_bytes(d.dtype, static_cast<uint64_t>(row));
  for (size_t t = 0; t < slots.size(); ++t) {
    GENIEX_TRY(
        quant::quantize_row(d.dtype, src.subspan(t * sz(row), sz(row)),
                            std::span<uint8_t>(v.state[st] + sz(slots[t]) * row_bytes, row_bytes)));
  }
  v.state[id] = v.state[st];  // the result aliases the state
  v.state_type[id] = v.state_type[st];
  v.f[id] = v.f[st];
  return {};
}

Status run_op(Compiled& c, Vals& v, NodeId id) {
  const auto& n = c.g.node(id);
  const auto& in = n.inputs;
  const auto& p = n.params;
  if (n.op == OpKind::kCacheWrite) return cache_write(c, v, id);
  std::vector<float>& res = c.f32[id];
  const std::span<float> out(res);
  auto desc = [&](size_t i) -> const graph::TensorDesc& { return c.g.node(in[i]).desc; };
  switch (n.op) {
    case OpKind::kMatMul:
      int8_matmul(*c.int8.at(in[0]), v.f[in[1]], desc(1).nrows(), c.act_q, c.act_scale, res.data());
      return {};
    case OpKind::kRmsNorm:
      return graph::ref::rms_norm(f32(c, v, in[0]),
                                  in.size() == 2 ? f32(c, v, in[1]) : std::span<const float>(),
                                  desc(0).ne[0], p.eps, out);
    case OpKind::kRope:
      return graph::ref::rope(f32(c, v, in[0]), desc(0).ne[0], desc(0).ne[1], desc(0).ne[2],
                              i32(c, v, in[1]), p.rope,
                              in.size() == 3 ? f32(c, v, in[2]) : std::span<const float>(), out);
    case OpKind::kAttention: return attention(c, v, id, res.data());
    case OpKind::kSoftmax:
      return graph::ref::softmax(f32(c, v, in[0]), desc(0).ne[0], p.scale, out);
    case OpKind::kGelu:
    case OpKind::kSilu:
    case OpKind::kScale: return graph::ref::unary(n.op, f32(c, v, in[0]), p.scale, out);
    case OpKind::kMul:
    case OpKind::kAdd:
      return graph::ref::binary(n.op, f32(c, v, in[0]), desc(0).ne, f32(c, v, in[1]), desc(1).ne,
                                out);
    case OpKind::kGlu: return graph::ref::glu(p.glu, f32(c, v, in[0]), f32(c, v, in[1]), out);
    case OpKind::kReshape: {
      const auto x = f32(c, v, in[0]);
      std::copy(x.begin(), x.end(), res.begin());
      return {};
    }
    case OpKind::kGetRows: {
      const auto x = f32(c, v, in[0]);
      const auto idx = i32(c, v, in[1]);
      const int64_t e = desc(0).ne[0];
      for (size_t r = 0; r < idx.size(); ++r) {
        if (idx[r] < 0 || idx[r] >= desc(0).ne[1]) {
          return out_of_range("row " + std::to_string(idx[r]) + " outside [0, " +
                              std::to_string(desc(0).ne[1]) + ")");
        }
        std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(idx[r] * e), e,
                    res.begin() + static_cast<std::ptrdiff_t>(sz(r) * sz(e)));
      }
      return {};
    }
    default: return unimplemented(std::string(graph::op_name(n.op)) + " is not supported");
  }
}

}  // namespace

Status execute_graph(Compiled& c, const geniex_npu_buffer* buffers, uint32_t n_buffers) {
  Vals v;
  GENIEX_TRY(bind(c, buffers, n_buffers, v));
  for (NodeId id = 0; id < c.g.size(); ++id) {
    const auto& n = c.g.node(id);
    if (n.role != NodeRole::kOp) continue;
    Status s = run_op(c, v, id);
    if (!s.ok()) {
      return Status(s.code(), std::string(graph::op_name(n.op)) + " '" + n.name + "' (tensor " +
                                  std::to_string(c.tensor_id[id]) + "): " + s.message());
    }
    if (n.op != OpKind::kCacheWrite) v.f[id] = c.f32[id].data();
  }
  for (NodeId id : c.outputs) {
    std::copy(c.f32[id].begin(), c.f32[id].end(), v.out[id]);
  }
  return {};
}

}  // namespace geniex::npu_ref
