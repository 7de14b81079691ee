#include "graph/graph.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>

#include "quant/quant.h"

namespace geniex::graph {
namespace {

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kI32 = GgmlType::kI32;

std::string shapes_text(const std::vector<TensorDesc>& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i != 0) s += ", ";
    s += in[i].to_string();
  }
  return s;
}

Status bad(OpKind kind, const std::vector<TensorDesc>& in, const std::string& why) {
  return invalid_argument(std::string(op_name(kind)) + "(" + shapes_text(in) + "): " + why);
}

bool is_vector(const TensorDesc& d) { return d.ne[1] == 1 && d.ne[2] == 1 && d.ne[3] == 1; }

// Checks count and that input `i` has dtype `want[i]`.
Status expect_inputs(OpKind kind, const std::vector<TensorDesc>& in, size_t min_n, size_t max_n) {
  if (in.size() < min_n || in.size() > max_n) {
    std::string want = min_n == max_n ? std::to_string(min_n)
                                      : std::to_string(min_n) + ".." + std::to_string(max_n);
    return bad(kind, in, "expects " + want + " inputs, got " + std::to_string(in.size()));
  }
  for (const auto& d : in) {
    for (int64_t n : d.ne) {
      if (n < 1) return bad(kind, in, "every dimension must be >= 1");
    }
  }
  return {};
}

Status expect_type(OpKind kind, const std::vector<TensorDesc>& in, size_t i, GgmlType t,
                   const char* what) {
  if (in[i].dtype != t) {
    return bad(kind, in,
               std::string(what) + " must be " + std::string(ggml_type_name(t)) + ", got " +
                   std::string(ggml_type_name(in[i].dtype)));
  }
  return {};
}

Result<TensorDesc> infer_binary(OpKind kind, const std::vector<TensorDesc>& in) {
  GENIEX_TRY(expect_inputs(kind, in, 2, 2));
  GENIEX_TRY(expect_type(kind, in, 0, kF32, "a"));
  GENIEX_TRY(expect_type(kind, in, 1, kF32, "b"));
  for (int i = 0; i < 4; ++i) {
    if (in[1].ne[i] != in[0].ne[i] && in[1].ne[i] != 1) {
      return bad(kind, in,
                 "b must match a or be 1 in every dimension (dim " + std::to_string(i) + ")");
    }
  }
  return in[0];
}

Result<TensorDesc> infer_rope(const std::vector<TensorDesc>& in, const OpParams& p) {
  constexpr OpKind kind = OpKind::kRope;
  GENIEX_TRY(expect_inputs(kind, in, 2, 3));
  GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
  GENIEX_TRY(expect_type(kind, in, 1, kI32, "pos"));
  const TensorDesc& x = in[0];
  if (x.ne[3] != 1) return bad(kind, in, "x must be [head_dim, n_head, n_tokens]");
  if (!is_vector(in[1]) || in[1].ne[0] != x.ne[2]) {
    return bad(kind, in, "pos must be [n_tokens] = [" + std::to_string(x.ne[2]) + "]");
  }
  const int64_t n_dims = p.rope.n_dims == 0 ? x.ne[0] : p.rope.n_dims;
  if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x.ne[0]) {
    return bad(kind, in, "n_dims " + std::to_string(n_dims) + " must be even and in [2, head_dim]");
  }
  if (!(p.rope.base > 0.0f) || !std::isfinite(p.rope.freq_scale)) {
    return bad(kind, in, "base must be > 0 and freq_scale finite");
  }
  if (in.size() == 3) {
    GENIEX_TRY(expect_type(kind, in, 2, kF32, "freq_factors"));
    if (!is_vector(in[2]) || in[2].ne[0] != n_dims / 2) {
      return bad(kind, in,
                 "freq_factors must be [n_dims/2] = [" + std::to_string(n_dims / 2) + "]");
    }
  }
  return x;
}

// States and CacheWrite results hold K/V as F32, F16 or a block type attention can read.
bool is_kv_type(GgmlType t) {
  return t == kF32 || t == GgmlType::kF16 || t == GgmlType::kQ8_0 || t == GgmlType::kQ4_0;
}

// Q8_0 / Q4_0 rows are whole 32-element blocks per head (each head's row is dotted alone).
Status expect_kv_blocks(OpKind kind, const std::vector<TensorDesc>& in, size_t i,
                        const char* what) {
  const GgmlType t = in[i].dtype;
  if (t != GgmlType::kQ8_0 && t != GgmlType::kQ4_0) return {};
  const int64_t block = static_cast<int64_t>(traits(t).block_size);
  if (in[i].ne[0] % block != 0) {
    return bad(kind, in,
               std::string(what) + " head_dim " + std::to_string(in[i].ne[0]) +
                   " is not a multiple of " + std::to_string(block) + " (the " +
                   std::string(ggml_type_name(t)) + " block size)");
  }
  return {};
}

Result<TensorDesc> infer_attention(const std::vector<TensorDesc>& in, const OpParams& p) {
  constexpr OpKind kind = OpKind::kAttention;
  GENIEX_TRY(expect_inputs(kind, in, 5, 7));
  const char* names[] = {"q", "k", "v", "q_pos", "k_pos", "k_rows", "q_seg"};
  for (size_t i = 0; i < in.size(); ++i) {
    // k and v may come from an F16 / Q8_0 / Q4_0 KV cache (a state or a CacheWrite result).
    if ((i == 1 || i == 2) && is_kv_type(in[i].dtype)) continue;
    GENIEX_TRY(expect_type(kind, in, i, i < 3 ? kF32 : kI32, names[i]));
  }
  const TensorDesc &q = in[0], &k = in[1], &v = in[2];
  const bool k_quant = k.dtype == GgmlType::kQ8_0 || k.dtype == GgmlType::kQ4_0;
  const bool v_quant = v.dtype == GgmlType::kQ8_0 || v.dtype == GgmlType::kQ4_0;
  if (k_quant != v_quant) {
    return bad(kind, in, "k and v must both be Q8_0/Q4_0 or both F32/F16");
  }
  GENIEX_TRY(expect_kv_blocks(kind, in, 1, "k"));
  GENIEX_TRY(expect_kv_blocks(kind, in, 2, "v"));
  if (q.ne[3] != 1 || k.ne[3] != 1 || v.ne[3] != 1) {
    return bad(kind, in, "q, k, v must be 3-D [head_dim, n_heads, n_tokens]");
  }
  if (k.ne[0] != q.ne[0]) return bad(kind, in, "k head_dim must equal q head_dim");
  if (v.ne[1] != k.ne[1] || v.ne[2] != k.ne[2]) {
    return bad(kind, in, "v must have the same n_kv_head and rows as k");
  }
  if (q.ne[1] % k.ne[1] != 0) {
    return bad(kind, in,
               "n_head " + std::to_string(q.ne[1]) + " is not a multiple of n_kv_head " +
                   std::to_string(k.ne[1]));
  }
  if (!is_vector(in[3]) || in[3].ne[0] != q.ne[2]) return bad(kind, in, "q_pos must be [n_q]");
  if (!is_vector(in[4])) return bad(kind, in, "k_pos must be 1-D [n_kv]");
  const int64_t n_kv = in[4].ne[0];
  if (in.size() == 5 && n_kv != k.ne[2]) {
    return bad(kind, in, "k_pos must be [n_kv] with n_kv = the rows of k (no k_rows given)");
  }
  if (in.size() >= 6 && (!is_vector(in[5]) || in[5].ne[0] != n_kv)) {
    return bad(kind, in, "k_rows must be [n_kv], the length of k_pos");
  }
  if (in.size() == 7 &&
      (in[6].ne[0] != 2 || in[6].ne[1] != q.ne[2] || in[6].ne[2] != 1 || in[6].ne[3] != 1)) {
    return bad(kind, in, "q_seg must be [2, n_q] (begin, end per query)");
  }
  if (p.attn.sliding_window < 0 || p.attn.softcap < 0.0f || !std::isfinite(p.attn.scale)) {
    return bad(kind, in, "sliding_window and softcap must be >= 0 and scale finite");
  }
  return make_desc(kF32, v.ne[0], q.ne[1], q.ne[2]);
}

}  // namespace

Result<TensorDesc> infer_shape(OpKind kind, const std::vector<TensorDesc>& in, const OpParams& p) {
  switch (kind) {
    case OpKind::kEmbedding: {
      GENIEX_TRY(expect_inputs(kind, in, 2, 2));
      if (!quant::can_dequantize(in[0].dtype)) {
        return unimplemented(std::string(op_name(kind)) + "(" + shapes_text(in) +
                             "): no dequantization for table type " +
                             std::string(ggml_type_name(in[0].dtype)));
      }
      if (!ggml_row_bytes(in[0].dtype, static_cast<uint64_t>(in[0].ne[0]))) {
        return bad(kind, in, "row length is not a multiple of the block size");
      }
      if (in[0].ne[2] != 1 || in[0].ne[3] != 1) return bad(kind, in, "table must be 2-D");
      GENIEX_TRY(expect_type(kind, in, 1, kI32, "ids"));
      if (!is_vector(in[1])) return bad(kind, in, "ids must be 1-D [n_tokens]");
      return make_desc(kF32, in[0].ne[0], in[1].ne[0]);
    }
    case OpKind::kMatMul: {
      GENIEX_TRY(expect_inputs(kind, in, 2, 2));
      const TensorDesc &w = in[0], &x = in[1];
      if (!quant::can_vec_dot(w.dtype)) {
        return unimplemented(std::string(op_name(kind)) + "(" + shapes_text(in) +
                             "): no dot product for weight type " +
                             std::string(ggml_type_name(w.dtype)));
      }
      if (w.ne[2] != 1 || w.ne[3] != 1) return bad(kind, in, "weight must be 2-D [K, N]");
      GENIEX_TRY(expect_type(kind, in, 1, kF32, "x"));
      if (x.ne[0] != w.ne[0]) {
        return bad(
            kind, in,
            "K mismatch: weight K=" + std::to_string(w.ne[0]) + ", x K=" + std::to_string(x.ne[0]));
      }
      if (!ggml_row_bytes(w.dtype, static_cast<uint64_t>(w.ne[0]))) {
        return bad(kind, in, "K is not a multiple of the weight block size");
      }
      return make_desc(kF32, w.ne[1], x.ne[1], x.ne[2], x.ne[3]);
    }
    case OpKind::kRmsNorm: {
      GENIEX_TRY(expect_inputs(kind, in, 1, 2));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      if (in.size() == 2) {
        GENIEX_TRY(expect_type(kind, in, 1, kF32, "w"));
        if (!is_vector(in[1]) || in[1].ne[0] != in[0].ne[0]) {
          return bad(kind, in, "w must be [ne0] = [" + std::to_string(in[0].ne[0]) + "]");
        }
      }
      if (!(p.eps >= 0.0f)) return bad(kind, in, "eps must be >= 0");
      return in[0];
    }
    case OpKind::kLayerNorm: {
      GENIEX_TRY(expect_inputs(kind, in, 1, 3));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      for (size_t i = 1; i < in.size(); ++i) {
        const char* what = i == 1 ? "w" : "b";
        GENIEX_TRY(expect_type(kind, in, i, kF32, what));
        if (!is_vector(in[i]) || in[i].ne[0] != in[0].ne[0]) {
          return bad(kind, in,
                     std::string(what) + " must be [ne0] = [" + std::to_string(in[0].ne[0]) + "]");
        }
      }
      if (!(p.eps >= 0.0f)) return bad(kind, in, "eps must be >= 0");
      return in[0];
    }
    case OpKind::kRope: return infer_rope(in, p);
    case OpKind::kAttention: return infer_attention(in, p);
    case OpKind::kSoftmax:
    case OpKind::kGelu:
    case OpKind::kGeluErf:
    case OpKind::kSilu:
    case OpKind::kScale:
    case OpKind::kSoftcap: {
      GENIEX_TRY(expect_inputs(kind, in, 1, 1));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      if (kind == OpKind::kSoftcap && !(p.scale > 0.0f)) return bad(kind, in, "cap must be > 0");
      return in[0];
    }
    case OpKind::kMul:
    case OpKind::kAdd: return infer_binary(kind, in);
    case OpKind::kGlu: {
      GENIEX_TRY(expect_inputs(kind, in, 2, 2));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "gate"));
      GENIEX_TRY(expect_type(kind, in, 1, kF32, "up"));
      if (in[0].ne != in[1].ne) return bad(kind, in, "gate and up must have the same shape");
      return in[0];
    }
    case OpKind::kReshape: {
      GENIEX_TRY(expect_inputs(kind, in, 1, 1));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      TensorDesc out{kF32, p.ne};
      for (int64_t n : out.ne) {
        if (n < 1) return bad(kind, in, "target dims must be >= 1");
      }
      if (out.nelements() != in[0].nelements()) {
        return bad(kind, in, "target " + out.to_string() + " has a different element count");
      }
      return out;
    }
    case OpKind::kGetRows: {
      GENIEX_TRY(expect_inputs(kind, in, 2, 2));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      GENIEX_TRY(expect_type(kind, in, 1, kI32, "idx"));
      if (in[0].ne[2] != 1 || in[0].ne[3] != 1) return bad(kind, in, "x must be 2-D [E, T]");
      if (!is_vector(in[1])) return bad(kind, in, "idx must be 1-D [n]");
      return make_desc(kF32, in[0].ne[0], in[1].ne[0]);
    }
    case OpKind::kCacheWrite: {
      GENIEX_TRY(expect_inputs(kind, in, 3, 3));
      if (!is_kv_type(in[0].dtype)) return bad(kind, in, "state must be F32, F16, Q8_0 or Q4_0");
      GENIEX_TRY(expect_kv_blocks(kind, in, 0, "state"));
      GENIEX_TRY(expect_type(kind, in, 1, kF32, "src"));
      GENIEX_TRY(expect_type(kind, in, 2, kI32, "slots"));
      const TensorDesc &st = in[0], &src = in[1];
      if (st.ne[3] != 1 || src.ne[3] != 1 || st.ne[0] != src.ne[0] || st.ne[1] != src.ne[1]) {
        return bad(kind, in, "src must be [E0, E1, T] with the state's E0, E1");
      }
      if (!is_vector(in[2]) || in[2].ne[0] != src.ne[2]) return bad(kind, in, "slots must be [T]");
      return st;
    }
    case OpKind::kHadamard: {
      GENIEX_TRY(expect_inputs(kind, in, 1, 1));
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "x"));
      const int32_t h = p.hadamard_n;
      if (h < 2 || h > kMaxHadamardN || (h & (h - 1)) != 0 || in[0].ne[0] % h != 0) {
        return bad(kind, in,
                   "n = " + std::to_string(h) + " must be a power of two in [2, " +
                       std::to_string(kMaxHadamardN) + "] dividing ne0");
      }
      return in[0];
    }
    case OpKind::kShortConv:
    case OpKind::kShortConvState: {
      const bool conv = kind == OpKind::kShortConv;
      GENIEX_TRY(expect_inputs(kind, in, conv ? 2 : 3, conv ? 4 : 3));
      if (conv && in.size() == 3) return bad(kind, in, "state and seq come together");
      GENIEX_TRY(expect_type(kind, in, 0, kF32, "u"));
      const TensorDesc& u = in[0];
      if (u.ne[2] != 1 || u.ne[3] != 1) return bad(kind, in, "u must be 2-D [E, T]");
      if (in.size() == 3 || in.size() == 4) {
        const size_t si = conv ? 2 : 1;
        GENIEX_TRY(expect_type(kind, in, si, kF32, "state"));
        GENIEX_TRY(expect_type(kind, in, si + 1, kI32, "seq"));
        const TensorDesc& st = in[si];
        if (st.ne[0] != u.ne[0] || st.ne[3] != 1) {
          return bad(kind, in, "state must be [E, L-1, S] with u's E");
        }
        if (!is_vector(in[si + 1]) || in[si + 1].ne[0] != u.ne[1]) {
          return bad(kind, in, "seq must be [T]");
        }
        if (!conv) return st;
      }
      GENIEX_TRY(expect_type(kind, in, 1, kF32, "w"));
      const TensorDesc& w = in[1];
      if (w.ne[1] != u.ne[0] || w.ne[2] != 1 || w.ne[3] != 1 || w.ne[0] < 2) {
        return bad(kind, in, "w must be [L, E] with L >= 2 and u's E");
      }
      if (in.size() == 4 && in[2].ne[1] != w.ne[0] - 1) {
        return bad(kind, in, "state must hold L-1 columns");
      }
      return u;
    }
  }
  return internal_error("infer_shape: unknown op kind");
}

namespace {
std::atomic<uint64_t> g_next_graph_uid{1};
}  // namespace

Graph::Graph() : uid_(g_next_graph_uid.fetch_add(1)) {}
Graph::Graph(const Graph& other)
    : nodes_(other.nodes_),
      uid_(g_next_graph_uid.fetch_add(1)),
      stage_(other.stage_),
      n_stages_(other.n_stages_),
      batch_tokens_(other.batch_tokens_),
      stage_labels_(other.stage_labels_),
      stage_kinds_(other.stage_kinds_),
      stage_layers_(other.stage_layers_) {}
Graph& Graph::operator=(const Graph& other) {
  if (this != &other) {
    nodes_ = other.nodes_;
    uid_ = g_next_graph_uid.fetch_add(1);
    stage_ = other.stage_;
    n_stages_ = other.n_stages_;
    batch_tokens_ = other.batch_tokens_;
    stage_labels_ = other.stage_labels_;
    stage_kinds_ = other.stage_kinds_;
    stage_layers_ = other.stage_layers_;
  }
  return *this;
}

void Graph::begin_stage(int32_t id, std::string label, StageKind kind, int32_t layer) {
  stage_ = std::max<int32_t>(0, id);
  n_stages_ = std::max(n_stages_, stage_ + 1);
  const auto n = static_cast<size_t>(stage_) + 1;
  if (stage_labels_.size() < n) stage_labels_.resize(n);
  if (stage_kinds_.size() < n) stage_kinds_.resize(n, StageKind::kOther);
  if (stage_layers_.size() < n) stage_layers_.resize(n, -1);
  stage_labels_[static_cast<size_t>(stage_)] = std::move(label);
  stage_kinds_[static_cast<size_t>(stage_)] = kind;
  stage_layers_[static_cast<size_t>(stage_)] = kind == StageKind::kLayer ? std::max(0, layer) : -1;
}

StageKind Graph::stage_kind(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= stage_kinds_.size()) return StageKind::kOther;
  return stage_kinds_[static_cast<size_t>(id)];
}

int32_t Graph::stage_layer(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= stage_layers_.size()) return -1;
  return stage_layers_[static_cast<size_t>(id)];
}

int32_t Graph::n_layer_stages() const {
  int32_t n = 0;
  for (int32_t l : stage_layers_) n = std::max(n, l + 1);
  return n;
}

std::string Graph::stage_label(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= stage_labels_.size()) return {};
  return stage_labels_[id];
}

NodeId Graph::push(Node node) {
  node.stage = stage_;
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId Graph::add_leaf(NodeRole role, const TensorDesc& desc, std::string name) {
  Node n;
  n.role = role;
  n.desc = desc;
  n.name = std::move(name);
  return push(std::move(n));
}

NodeId Graph::add_input(const TensorDesc& desc, std::string name) {
  return add_leaf(NodeRole::kInput, desc, std::move(name));
}

NodeId Graph::add_weight(const TensorDesc& desc, std::string name) {
  return add_leaf(NodeRole::kWeight, desc, std::move(name));
}

NodeId Graph::add_state(const TensorDesc& desc, std::string name) {
  return add_leaf(NodeRole::kState, desc, std::move(name));
}

Result<NodeId> Graph::add_op(OpKind kind, const std::vector<NodeId>& inputs, const OpParams& params,
                             std::string name) {
  std::vector<TensorDesc> descs;
  descs.reserve(inputs.size());
  for (NodeId id : inputs) {
    if (id >= nodes_.size()) {
      return invalid_argument(std::string(op_name(kind)) + ": input node " + std::to_string(id) +
                              " does not exist (graph has " + std::to_string(nodes_.size()) +
                              " nodes)");
    }
    const Node& in = nodes_[id];
    // Inputs (not weights) are activations or positions: F32 or I32 only.
    if (in.role == NodeRole::kInput && in.desc.dtype != kF32 && in.desc.dtype != kI32) {
      return invalid_argument(std::string(op_name(kind)) + ": input '" + in.name +
                              "' must be F32 or I32, got " +
                              std::string(ggml_type_name(in.desc.dtype)));
    }
    TensorDesc d = in.desc;
    // F32-consuming ops accept any dequantizable weight (e.g. an F16 norm weight): the
    // reference dequantizes it. MatMul / Embedding see the raw type.
    const bool raw_slot = (kind == OpKind::kMatMul || kind == OpKind::kEmbedding) && descs.empty();
    if (kind == OpKind::kCacheWrite && descs.empty() && in.role != NodeRole::kState) {
      return invalid_argument("CacheWrite: input 0 '" + in.name + "' must be a state node");
    }
    if (in.role == NodeRole::kWeight && !raw_slot && quant::can_dequantize(d.dtype)) {
      d.dtype = kF32;
    }
    descs.push_back(d);
  }
  GENIEX_ASSIGN_OR_RETURN(TensorDesc out, infer_shape(kind, descs, params));
  Node n;
  n.role = NodeRole::kOp;
  n.op = kind;
  n.inputs = inputs;
  n.params = params;
  n.desc = out;
  n.name = std::move(name);
  return push(std::move(n));
}

}  // namespace geniex::graph
