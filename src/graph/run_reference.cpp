#include "graph/run_reference.h"

#include <algorithm>
#include <string>
#include <vector>

#include "graph/ref_ops.h"
#include "quant/quant.h"

namespace geniex::graph {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

std::string who(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return "node " + std::to_string(id) + (n.name.empty() ? std::string() : " '" + n.name + "'");
}

// True when node `id` is a Q8_0 / Q4_0 KV cache (a state or a CacheWrite result) that attention
// reads as blocks; a weight of those types is dequantized like any F32 input.
bool is_block_kv(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return n.role != NodeRole::kWeight &&
         (n.desc.dtype == GgmlType::kQ8_0 || n.desc.dtype == GgmlType::kQ4_0);
}

// Values of every node during a run: F32 results (owned), I32 inputs and raw weights (borrowed).
struct Values {
  std::vector<std::vector<float>> f32;
  std::vector<std::span<const int32_t>> i32;
  std::vector<std::span<const uint8_t>> raw;  // weights, states, CacheWrite results
  std::vector<std::span<uint8_t>> state;      // writable bytes of state nodes
  std::vector<bool> has_f32;
};

// The F32 view of node `id`, dequantizing a weight on first use.
Result<std::span<const float>> f32_of(const Graph& g, Values& v, NodeId id) {
  if (!v.has_f32[id]) {
    const Node& n = g.node(id);
    if (v.raw[id].empty()) return internal_error(who(g, id) + " has no F32 value");
    const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
    if (!row) return invalid_argument(who(g, id) + ": row is not whole blocks");
    auto& buf = v.f32[id];
    buf.resize(sz(n.desc.nelements()));
    for (int64_t r = 0; r < n.desc.nrows(); ++r) {
      GENIEX_TRY(quant::dequantize_row(
          n.desc.dtype, v.raw[id].subspan(sz(r) * *row, *row),
          std::span<float>(buf).subspan(sz(r * n.desc.ne[0]), sz(n.desc.ne[0]))));
    }
    v.has_f32[id] = true;
  }
  return std::span<const float>(v.f32[id]);
}

Status bind_leaf(const Graph& g, Values& v, NodeId id,
                 const std::unordered_map<NodeId, std::span<const float>>& f32,
                 const std::unordered_map<NodeId, std::span<const int32_t>>& i32,
                 const std::unordered_map<NodeId, std::span<const uint8_t>>& raw) {
  const Node& n = g.node(id);
  const size_t count = sz(n.desc.nelements());
  if (n.role == NodeRole::kWeight) {
    auto it = raw.find(id);
    if (it == raw.end()) return invalid_argument(who(g, id) + ": weight is not bound");
    const auto bytes = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
    if (!bytes || it->second.size() != *bytes * sz(n.desc.nrows())) {
      return invalid_argument(
          who(g, id) + ": bound " + std::to_string(it->second.size()) + " bytes, " +
          n.desc.to_string() + " needs " +
          (bytes ? std::to_string(*bytes * sz(n.desc.nrows())) : "whole blocks"));
    }
    v.raw[id] = it->second;
    return {};
  }
  if (n.desc.dtype == GgmlType::kI32) {
    auto it = i32.find(id);
    if (it == i32.end()) return invalid_argument(who(g, id) + ": I32 input is not bound");
    if (it->second.size() != count) {
      return invalid_argument(who(g, id) + ": bound " + std::to_string(it->second.size()) +
                              " elements, expected " + std::to_string(count));
    }
    v.i32[id] = it->second;
    return {};
  }
  auto it = f32.find(id);
  if (it == f32.end()) return invalid_argument(who(g, id) + ": F32 input is not bound");
  if (it->second.size() != count) {
    return invalid_argument(who(g, id) + ": bound " + std::to_string(it->second.size()) +
                            " elements, expected " + std::to_string(count));
  }
  v.f32[id].assign(it->second.begin(), it->second.end());
  v.has_f32[id] = true;
  return {};
}

Status bind_state(const Graph& g, Values& v, NodeId id,
                  const std::unordered_map<NodeId, std::span<uint8_t>>& states) {
  const Node& n = g.node(id);
  auto it = states.find(id);
  if (it == states.end()) return invalid_argument(who(g, id) + ": state is not bound");
  const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
  const size_t need = row ? *row * sz(n.desc.nrows()) : 0;
  if (!row || it->second.size() < need) {
    return invalid_argument(who(g, id) + ": bound " + std::to_string(it->second.size()) +
                            " bytes, " + n.desc.to_string() + " needs " + std::to_string(need));
  }
  v.state[id] = it->second;
  v.raw[id] = it->second.first(need);
  return {};
}

// Writes src token t into state slot slots[t], converting to the state's type.
Status cache_write(const Graph& g, Values& v, NodeId id) {
  const Node& n = g.node(id);
  const NodeId st = n.inputs[0];
  GENIEX_ASSIGN_OR_RETURN(auto src, f32_of(g, v, n.inputs[1]));
  const auto slots = v.i32[n.inputs[2]];
  const TensorDesc& d = g.node(st).desc;
  const int64_t row_elems = d.ne[0] * d.ne[1];
  const size_t row_bytes = *ggml_row_bytes(d.dtype, static_cast<uint64_t>(row_elems));
  std::span<uint8_t> bytes = v.state[st];
  for (size_t t = 0; t < slots.size(); ++t) {  // all slots checked before anything is written
    if (slots[t] < 0 || slots[t] >= d.ne[2]) {
      return out_of_range(who(g, id) + ": slot " + std::to_string(slots[t]) + " outside [0, " +
                          std::to_string(d.ne[2]) + ")");
    }
  }
  for (size_t t = 0; t < slots.size(); ++t) {
    GENIEX_TRY(quant::quantize_row(d.dtype, src.subspan(t * sz(row_elems), sz(row_elems)),
                                   bytes.subspan(sz(slots[t]) * row_bytes, row_bytes)));
  }
  v.raw[id] = v.raw[st];
  v.has_f32[st] = false;  // any F32 copy of the state is stale now
  return {};
}

Status run_op(const Graph& g, Values& v, NodeId id) {
  const Node& n = g.node(id);
  const auto& in = n.inputs;
  const auto& p = n.params;
  if (n.op == OpKind::kCacheWrite) return cache_write(g, v, id);
  auto& out = v.f32[id];
  out.assign(sz(n.desc.nelements()), 0.0f);
  auto desc = [&](size_t i) -> const TensorDesc& { return g.node(in[i]).desc; };
  switch (n.op) {
    case OpKind::kEmbedding:
      return ref::embedding(desc(0).dtype, v.raw[in[0]], desc(0).ne[0], desc(0).ne[1], v.i32[in[1]],
                            out);
    case OpKind::kMatMul: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[1]));
      return ref::matmul(desc(0).dtype, v.raw[in[0]], desc(0).ne[0], desc(0).ne[1], x,
                         desc(1).nrows(), out);
    }
    case OpKind::kRmsNorm: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      std::span<const float> w;
      if (in.size() == 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, v, in[1]));
      }
      return ref::rms_norm(x, w, desc(0).ne[0], p.eps, out);
    }
    case OpKind::kLayerNorm: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      std::span<const float> w, b;
      if (in.size() >= 2) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, v, in[1]));
      }
      if (in.size() == 3) {
        GENIEX_ASSIGN_OR_RETURN(b, f32_of(g, v, in[2]));
      }
      return ref::layer_norm(x, w, b, desc(0).ne[0], p.eps, out);
    }
    case OpKind::kRope: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      std::span<const float> ff;
      if (in.size() == 3) {
        GENIEX_ASSIGN_OR_RETURN(ff, f32_of(g, v, in[2]));
      }
      return ref::rope(x, desc(0).ne[0], desc(0).ne[1], desc(0).ne[2], v.i32[in[1]], p.rope, ff,
                       out);
    }
    case OpKind::kAttention: {
      GENIEX_ASSIGN_OR_RETURN(auto q, f32_of(g, v, in[0]));
      ref::AttentionDims d{desc(0).ne[0], desc(2).ne[0], desc(0).ne[1], desc(1).ne[1],
                           desc(0).ne[2], desc(4).ne[0], desc(1).ne[2]};
      ref::AttentionPaging paging;
      if (in.size() >= 6) paging.k_rows = v.i32[in[5]];
      if (in.size() >= 7) paging.q_seg = v.i32[in[6]];
      if (is_block_kv(g, in[1])) {  // a Q8_0 / Q4_0 cache: llama.cpp's flash-attention numerics
        return ref::attention_blocks(q, {desc(1).dtype, v.raw[in[1]]},
                                     {desc(2).dtype, v.raw[in[2]]}, d, v.i32[in[3]], v.i32[in[4]],
                                     p.attn, paging, out);
      }
      GENIEX_ASSIGN_OR_RETURN(auto k, f32_of(g, v, in[1]));
      GENIEX_ASSIGN_OR_RETURN(auto vv, f32_of(g, v, in[2]));
      return ref::attention(q, k, vv, d, v.i32[in[3]], v.i32[in[4]], p.attn, paging, out);
    }
    case OpKind::kSoftmax: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      return ref::softmax(x, desc(0).ne[0], p.scale, out);
    }
    case OpKind::kGelu:
    case OpKind::kGeluErf:
    case OpKind::kSilu:
    case OpKind::kScale:
    case OpKind::kSoftcap: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      return ref::unary(n.op, x, p.scale, out);
    }
    case OpKind::kMul:
    case OpKind::kAdd: {
      GENIEX_ASSIGN_OR_RETURN(auto a, f32_of(g, v, in[0]));
      GENIEX_ASSIGN_OR_RETURN(auto b, f32_of(g, v, in[1]));
      return ref::binary(n.op, a, desc(0).ne, b, desc(1).ne, out);
    }
    case OpKind::kGlu: {
      GENIEX_ASSIGN_OR_RETURN(auto gate, f32_of(g, v, in[0]));
      GENIEX_ASSIGN_OR_RETURN(auto up, f32_of(g, v, in[1]));
      return ref::glu(p.glu, gate, up, out);
    }
    case OpKind::kReshape: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      std::copy(x.begin(), x.end(), out.begin());
      return {};
    }
    case OpKind::kGetRows: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      const auto idx = v.i32[in[1]];
      const int64_t e = desc(0).ne[0];
      for (size_t r = 0; r < idx.size(); ++r) {
        if (idx[r] < 0 || idx[r] >= desc(0).ne[1]) {
          return out_of_range("row " + std::to_string(idx[r]) + " outside [0, " +
                              std::to_string(desc(0).ne[1]) + ")");
        }
        std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(idx[r] * e), e,
                    out.begin() + static_cast<std::ptrdiff_t>(sz(r) * sz(e)));
      }
      return {};
    }
    case OpKind::kHadamard: {
      GENIEX_ASSIGN_OR_RETURN(auto x, f32_of(g, v, in[0]));
      return ref::hadamard(x, p.hadamard_n, out);
    }
    case OpKind::kShortConv:
    case OpKind::kShortConvState: {
      const bool conv = n.op == OpKind::kShortConv;
      GENIEX_ASSIGN_OR_RETURN(auto u, f32_of(g, v, in[0]));
      const size_t si = conv ? 2 : 1;
      std::span<const float> w, state;
      std::span<const int32_t> seq;
      if (in.size() > si) {
        GENIEX_ASSIGN_OR_RETURN(state, f32_of(g, v, in[si]));
        seq = v.i32[in[si + 1]];
      }
      if (conv) {
        GENIEX_ASSIGN_OR_RETURN(w, f32_of(g, v, in[1]));
        return ref::short_conv(u, desc(0).ne[0], desc(0).ne[1], w, desc(1).ne[0], state, seq, out,
                               {});
      }
      // The new state needs no weights: taps = state columns + 1, zero weights.
      const int64_t taps = desc(1).ne[1] + 1;
      std::vector<float> zeros(sz(desc(0).ne[0] * taps), 0.0f);
      return ref::short_conv(u, desc(0).ne[0], desc(0).ne[1], zeros, taps, state, seq, {}, out);
    }
    case OpKind::kCacheWrite: break;  // handled above
  }
  return internal_error("run_reference: unknown op kind");
}

}  // namespace

Status run_reference(const Graph& graph, const Bindings& b) {
  const size_t n = graph.size();
  Values v;
  v.f32.resize(n);
  v.i32.resize(n);
  v.raw.resize(n);
  v.state.resize(n);
  v.has_f32.assign(n, false);
  std::unordered_map<NodeId, std::span<uint8_t>> states;
  for (const auto& [id, st] : b.states_) {
    if (id < n && st.type != graph.node(id).desc.dtype) {
      return invalid_argument(who(graph, id) + ": state bound as " +
                              std::string(ggml_type_name(st.type)) + " but declared " +
                              graph.node(id).desc.to_string());
    }
    states[id] = st.bytes;
  }
  std::unordered_map<NodeId, std::span<const uint8_t>> raw;
  for (const auto& [id, w] : b.weights_) {
    if (id < n && w.type != graph.node(id).desc.dtype) {
      return invalid_argument(who(graph, id) + ": bound as " + std::string(ggml_type_name(w.type)) +
                              " but declared " + graph.node(id).desc.to_string());
    }
    raw[id] = w.bytes;
  }
  for (NodeId id = 0; id < n; ++id) {
    const Node& node = graph.node(id);
    if (node.role == NodeRole::kOp) {
      GENIEX_TRY(BindingsAccess(b).run_hook(id));
      Status s = run_op(graph, v, id);
      if (!s.ok()) {
        return Status(s.code(),
                      who(graph, id) + " (" + std::string(op_name(node.op)) + "): " + s.message());
      }
      if (node.op != OpKind::kCacheWrite) v.has_f32[id] = true;
    } else if (node.role == NodeRole::kState) {
      GENIEX_TRY(bind_state(graph, v, id, states));
    } else {
      GENIEX_TRY(bind_leaf(graph, v, id, b.f32_, b.i32_, raw));
    }
  }
  for (const auto& [id, dst] : b.out_) {
    if (id >= n) return invalid_argument("output binding names missing node " + std::to_string(id));
    if (graph.node(id).desc.dtype == GgmlType::kI32) {
      return invalid_argument(who(graph, id) + ": I32 nodes cannot be F32 outputs");
    }
    GENIEX_ASSIGN_OR_RETURN(auto src, f32_of(graph, v, id));
    if (dst.size() != src.size()) {
      return invalid_argument(who(graph, id) + ": output buffer has " + std::to_string(dst.size()) +
                              " elements, expected " + std::to_string(src.size()));
    }
    std::copy(src.begin(), src.end(), dst.begin());
  }
  return {};
}

}  // namespace geniex::graph
