// Compile step of the reference NPU: rebuild the C description as a graph::Graph (which checks
// every shape and type), enforce the NPU's rules (static token counts, op set, F32/F16 state,
// constant matmul weights), charge the memory, quantize the weights to int8.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "backends/npu/ref_plugin/ref_device.h"
#include "quant/quant.h"

namespace geniex::npu_ref {
namespace {

using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

size_t sz(int64_t v) { return static_cast<size_t>(v); }

constexpr int64_t kMaxDim = int64_t{1} << 32;
constexpr int64_t kMaxElements = int64_t{1} << 40;
// Largest matmul reduction with no int32 overflow: 127 * 127 * k < 2^31.
constexpr int64_t kMaxK = (int64_t{1} << 31) / (127 * 127) - 1;

Result<uint64_t> parse_bytes(std::string_view text) {
  if (text.empty()) return invalid_argument("empty memory size");
  uint64_t mult = 1;
  const char last = text.back();
  if (last == 'K' || last == 'k') mult = uint64_t{1} << 10;
  if (last == 'M' || last == 'm') mult = uint64_t{1} << 20;
  if (last == 'G' || last == 'g') mult = uint64_t{1} << 30;
  if (mult != 1) text.remove_suffix(1);
  uint64_t v = 0;
  if (text.empty() || text.size() > 12) return invalid_argument("bad memory size");
  for (char c : text) {
    if (c < '0' || c > '9') return invalid_argument("bad memory size '" + std::string(text) + "'");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v * mult;
}

Result<int64_t> parse_int(std::string_view text) {
  if (text.empty() || text.size() > 12)
    return invalid_argument("bad number '" + std::string(text) + "'");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return invalid_argument("bad number '" + std::string(text) + "'");
    v = v * 10 + (c - '0');
  }
  return v;
}

Status apply(DeviceConfig& cfg, std::string_view key, std::string_view value) {
  if (key == "memory") {
    GENIEX_ASSIGN_OR_RETURN(cfg.memory_bytes, parse_bytes(value));
  } else if (key == "fail_compile") {
    cfg.fail_compile = value == "1";
  } else if (key == "fail_execute_at") {
    GENIEX_ASSIGN_OR_RETURN(cfg.fail_execute_at, parse_int(value));
  } else {
    return invalid_argument("unknown config key '" + std::string(key) + "'");
  }
  return {};
}

std::string who(const graph::Graph& g, NodeId id) {
  const auto& n = g.node(id);
  return std::string(graph::op_name(n.op)) + " '" + n.name + "'";
}

graph::OpParams to_params(const geniex_npu_op_params& p) {
  graph::OpParams q;
  q.eps = p.eps;
  q.scale = p.scale;
  q.rope.mode = p.rope_mode == 1 ? graph::RopeMode::kNeox : graph::RopeMode::kNormal;
  q.rope.n_dims = p.rope_n_dims;
  q.rope.base = p.rope_base;
  q.rope.freq_scale = p.rope_freq_scale;
  q.attn.scale = p.attn_scale;
  q.attn.causal = p.attn_causal != 0;
  q.attn.sliding_window = p.attn_sliding_window;
  q.attn.softcap = p.attn_softcap;
  q.glu = p.glu == 1 ? graph::GluActivation::kGeluTanh : graph::GluActivation::kSilu;
  std::copy(p.ne, p.ne + 4, q.ne.begin());
  return q;
}

// The op kinds this NPU runs (no Embedding, no Softcap: the scheduler must split those off).
Result<OpKind> supported_kind(uint32_t kind) {
  switch (kind) {
    case GENIEX_NPU_OP_MATMUL: return OpKind::kMatMul;
    case GENIEX_NPU_OP_RMS_NORM: return OpKind::kRmsNorm;
    case GENIEX_NPU_OP_ROPE: return OpKind::kRope;
    case GENIEX_NPU_OP_ATTENTION: return OpKind::kAttention;
    case GENIEX_NPU_OP_SOFTMAX: return OpKind::kSoftmax;
    case GENIEX_NPU_OP_GELU: return OpKind::kGelu;
    case GENIEX_NPU_OP_SILU: return OpKind::kSilu;
    case GENIEX_NPU_OP_MUL: return OpKind::kMul;
    case GENIEX_NPU_OP_ADD: return OpKind::kAdd;
    case GENIEX_NPU_OP_SCALE: return OpKind::kScale;
    case GENIEX_NPU_OP_GLU: return OpKind::kGlu;
    case GENIEX_NPU_OP_RESHAPE: return OpKind::kReshape;
    case GENIEX_NPU_OP_GET_ROWS: return OpKind::kGetRows;
    case GENIEX_NPU_OP_CACHE_WRITE: return OpKind::kCacheWrite;
    case GENIEX_NPU_OP_EMBEDDING: return unimplemented("Embedding is not supported by this NPU");
    case GENIEX_NPU_OP_SOFTCAP: return unimplemented("Softcap is not supported by this NPU");
    default: return invalid_argument("unknown op kind " + std::to_string(kind));
  }
}

Status check_shape(const int64_t ne[4], const std::string& what) {
  int64_t total = 1;
  for (int i = 0; i < 4; ++i) {
    if (ne[i] < 1 || ne[i] > kMaxDim) return invalid_argument(what + ": bad dimension");
    total *= ne[i];
    if (total > kMaxElements) return invalid_argument(what + ": too many elements");
  }
  return {};
}

// Adds the leaf tensor `t` (input, weight or state) to c.g.
Status add_leaf(Compiled& c, const geniex_npu_tensor& t) {
  const std::string what = "tensor " + std::to_string(t.id);
  GENIEX_TRY(check_shape(t.ne, what));
  if (!ggml_type_traits(t.dtype)) return invalid_argument(what + ": unknown type id");
  graph::TensorDesc d;
  d.dtype = static_cast<GgmlType>(t.dtype);
  std::copy(t.ne, t.ne + 4, d.ne.begin());
  const std::string name = t.name != nullptr ? t.name : "";
  NodeId id = 0;
  switch (t.role) {
    case GENIEX_NPU_TENSOR_INPUT:
      if (d.dtype != GgmlType::kF32 && d.dtype != GgmlType::kI32) {
        return invalid_argument(what + ": inputs are F32 or I32");
      }
      id = c.g.add_input(d, name);
      break;
    case GENIEX_NPU_TENSOR_WEIGHT: {
      if (!quant::can_dequantize(d.dtype)) {
        return unimplemented(what + ": weight format " + std::string(ggml_type_name(d.dtype)));
      }
      const auto row = ggml_row_bytes(d.dtype, static_cast<uint64_t>(d.ne[0]));
      if (!row || t.data == nullptr || t.data_bytes != *row * static_cast<uint64_t>(d.nrows())) {
        return invalid_argument(what + " '" + name + "': weight data missing or of wrong size");
      }
      id = c.g.add_weight(d, name);
      break;
    }
    case GENIEX_NPU_TENSOR_STATE:
      if (d.dtype != GgmlType::kF32 && d.dtype != GgmlType::kF16) {
        return unimplemented(what + " '" + name + "': state type " +
                             std::string(ggml_type_name(d.dtype)) + " (this NPU keeps F32/F16)");
      }
      id = c.g.add_state(d, name);
      break;
    default: return invalid_argument(what + ": bad role");
  }
  c.node_of[t.id] = id;
  c.tensor_id.push_back(t.id);
  return {};
}

// Adds op `o` to c.g and checks its declared output tensor against the inferred shape.
Status add_op(Compiled& c, const geniex_npu_op& o, const geniex_npu_tensor& out) {
  GENIEX_ASSIGN_OR_RETURN(OpKind kind, supported_kind(o.kind));
  if (o.n_inputs > GENIEX_NPU_MAX_OP_INPUTS) return invalid_argument("too many op inputs");
  std::vector<NodeId> inputs;
  for (uint32_t i = 0; i < o.n_inputs; ++i) {
    auto it = c.node_of.find(o.inputs[i]);
    if (it == c.node_of.end()) {
      return invalid_argument(std::string(graph::op_name(kind)) + ": input tensor " +
                              std::to_string(o.inputs[i]) + " is not defined before use");
    }
    inputs.push_back(it->second);
  }
  if (kind == OpKind::kReshape) GENIEX_TRY(check_shape(o.params.ne, "Reshape target"));
  if (kind == OpKind::kMatMul && !inputs.empty() && c.g.node(inputs[0]).role != NodeRole::kWeight) {
    return unimplemented("MatMul '" + std::string(out.name ? out.name : "") +
                         "': the weight must be a constant (a weight tensor)");
  }
  GENIEX_ASSIGN_OR_RETURN(NodeId id, c.g.add_op(kind, inputs, to_params(o.params),
                                                out.name != nullptr ? out.name : ""));
  const graph::TensorDesc& d = c.g.node(id).desc;
  if (kind == OpKind::kMatMul && c.g.node(inputs[0]).desc.ne[0] > kMaxK) {
    return unimplemented(who(c.g, id) + ": reduction length over " + std::to_string(kMaxK));
  }
  if (kind == OpKind::kAttention) {
    for (int i = 1; i <= 2; ++i) {
      const GgmlType t = c.g.node(inputs[sz(i)]).desc.dtype;
      if (t != GgmlType::kF32 && t != GgmlType::kF16) {
        return unimplemented(who(c.g, id) + ": K/V type " + std::string(ggml_type_name(t)));
      }
    }
  }
  if (!std::equal(d.ne.begin(), d.ne.end(), out.ne) ||
      out.dtype != static_cast<uint32_t>(d.dtype)) {
    return invalid_argument(who(c.g, id) + ": declared output shape differs from " + d.to_string());
  }
  c.node_of[out.id] = id;
  c.tensor_id.push_back(out.id);
  return {};
}

// Bytes of F32 scratch one op needs besides its result.
struct Scratch {
  int64_t act = 0;     // int8 activation elements (largest matmul input)
  int64_t tokens = 0;  // activation scales
  int64_t kv = 0;      // gathered K + V floats (largest attention)
  int64_t keys = 0;    // iota entries
};

}  // namespace

Result<DeviceConfig> parse_config(const char* config) {
  // The config string is the only route: no environment variable changes the device.
  DeviceConfig cfg;
  std::string_view rest = config != nullptr ? config : "";
  while (!rest.empty()) {
    const size_t end = std::min(rest.find(';'), rest.size());
    const std::string_view item = rest.substr(0, end);
    rest.remove_prefix(std::min(end + 1, rest.size()));
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument("config item '" + std::string(item) + "' is not key=value");
    }
    GENIEX_TRY(apply(cfg, item.substr(0, eq), item.substr(eq + 1)));
  }
  return cfg;
}

Result<Compiled> compile_graph(Device& dev, const geniex_npu_graph& desc) {
  if (desc.struct_size < sizeof(geniex_npu_graph)) {
    return invalid_argument("graph struct_size is too small");
  }
  if (std::find(std::begin(kBatchTokens), std::end(kBatchTokens), desc.batch_tokens) ==
      std::end(kBatchTokens)) {
    return unimplemented("static shapes only: a batch of " + std::to_string(desc.batch_tokens) +
                         " tokens; this NPU compiles batches of {1, 128} tokens");
  }
  if (dev.config.fail_compile) return unimplemented("compile rejected by the fail_compile knob");
  if ((desc.n_tensors > 0 && desc.tensors == nullptr) || (desc.n_ops > 0 && desc.ops == nullptr) ||
      (desc.n_outputs > 0 && desc.outputs == nullptr)) {
    return invalid_argument("graph lists a count with a null array");
  }
  Compiled c;
  std::unordered_map<uint32_t, const geniex_npu_tensor*> tensors;
  for (uint32_t i = 0; i < desc.n_tensors; ++i) {
    const geniex_npu_tensor& t = desc.tensors[i];
    if (!tensors.emplace(t.id, &t).second) {
      return invalid_argument("tensor id " + std::to_string(t.id) + " appears twice");
    }
    if (t.role != GENIEX_NPU_TENSOR_OP) GENIEX_TRY(add_leaf(c, t));
  }
  for (uint32_t i = 0; i < desc.n_ops; ++i) {
    const geniex_npu_op& o = desc.ops[i];
    auto it = tensors.find(o.output);
    if (it == tensors.end() || it->second->role != GENIEX_NPU_TENSOR_OP ||
        c.node_of.count(o.output) != 0) {
      return invalid_argument("op " + std::to_string(i) + ": output tensor " +
                              std::to_string(o.output) + " is not a fresh OP tensor");
    }
    GENIEX_TRY(add_op(c, o, *it->second));
  }
  for (uint32_t i = 0; i < desc.n_outputs; ++i) {
    auto it = c.node_of.find(desc.outputs[i]);
    if (it == c.node_of.end()) {
      return invalid_argument("output tensor " + std::to_string(desc.outputs[i]) + " is unknown");
    }
    const auto& n = c.g.node(it->second);
    if (n.role != NodeRole::kOp || n.op == OpKind::kCacheWrite) {
      return unimplemented("output tensor " + std::to_string(desc.outputs[i]) +
                           ": only op results (not CacheWrite) can be read back");
    }
    c.outputs.push_back(it->second);
  }

  // Memory: int8 weights + f32 copies of other weights + every op result + scratch.
  const graph::Graph& g = c.g;
  std::vector<char> f32_weight(g.size(), 0);
  uint64_t bytes = 0, weight_bytes = 0;
  std::set<WeightKey> new_weights;
  Scratch s;
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto& n = g.node(id);
    if (n.role != NodeRole::kOp) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const bool int8_slot = n.op == OpKind::kMatMul && i == 0;
      if (!int8_slot && g.node(n.inputs[i]).role == NodeRole::kWeight) f32_weight[n.inputs[i]] = 1;
    }
    if (n.op == OpKind::kMatMul) {
      const auto& w = g.node(n.inputs[0]).desc;
      // Weights the device already holds (another graph's) cost nothing more.
      const WeightKey key{tensors.at(c.tensor_id[n.inputs[0]])->data,
                          static_cast<uint32_t>(w.dtype), w.ne[0], w.ne[1]};
      if (dev.weights.count(key) == 0 && new_weights.insert(key).second) {
        weight_bytes += static_cast<uint64_t>(w.nelements() + 4 * w.ne[1]);
      }
      const auto& x = g.node(n.inputs[1]).desc;
      s.act = std::max(s.act, x.nelements());
      s.tokens = std::max(s.tokens, x.nrows());
    }
    if (n.op == OpKind::kAttention) {
      const int64_t tk = g.node(n.inputs[4]).desc.ne[0];
      const auto& k = g.node(n.inputs[1]).desc;
      const auto& v = g.node(n.inputs[2]).desc;
      s.kv = std::max(s.kv, tk * (k.ne[0] * k.ne[1] + v.ne[0] * v.ne[1]));
      s.keys = std::max(s.keys, tk);
    }
    if (n.op != OpKind::kCacheWrite) bytes += 4 * static_cast<uint64_t>(n.desc.nelements());
  }
  for (NodeId id = 0; id < g.size(); ++id) {
    if (f32_weight[id]) bytes += 4 * static_cast<uint64_t>(g.node(id).desc.nelements());
  }
  bytes += static_cast<uint64_t>(s.act + 4 * s.tokens + 4 * s.kv + 4 * s.keys);
  const uint64_t cap = dev.config.memory_bytes;
  const uint64_t left = cap > dev.used_bytes ? cap - dev.used_bytes : 0;
  if (bytes + weight_bytes > left) {
    return resource_exhausted("graph needs " + std::to_string(bytes + weight_bytes) +
                              " bytes (int8 weights + "
                              "scratch), only " +
                              std::to_string(left) + " of " + std::to_string(cap) + " left");
  }

  // Prepare: weights (int8 for matmuls, f32 copies otherwise) and scratch.
  c.f32.resize(g.size());
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto& n = g.node(id);
    if (n.role == NodeRole::kOp) {
      if (n.op != OpKind::kCacheWrite) c.f32[id].assign(sz(n.desc.nelements()), 0.0f);
      if (n.op == OpKind::kMatMul && c.int8.count(n.inputs[0]) == 0) {
        const auto& w = g.node(n.inputs[0]);
        const auto* t = tensors.at(c.tensor_id[n.inputs[0]]);
        const WeightKey key{t->data, static_cast<uint32_t>(w.desc.dtype), w.desc.ne[0],
                            w.desc.ne[1]};
        auto it = dev.weights.find(key);
        if (it == dev.weights.end()) {
          auto m = std::make_shared<Int8Matrix>();
          GENIEX_TRY(quantize_weight(w.desc.dtype, static_cast<const uint8_t*>(t->data),
                                     w.desc.ne[0], w.desc.ne[1], *m));
          const auto wb = static_cast<uint64_t>(w.desc.nelements() + 4 * w.desc.ne[1]);
          it = dev.weights.emplace(key, SharedWeight{std::move(m), wb}).first;
          dev.used_bytes += wb;
        }
        c.int8[n.inputs[0]] = it->second.m;
      }
    } else if (f32_weight[id]) {
      const auto* t = tensors.at(c.tensor_id[id]);
      const auto row = *ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
      c.f32[id].resize(sz(n.desc.nelements()));
      const auto* src = static_cast<const uint8_t*>(t->data);
      for (int64_t r = 0; r < n.desc.nrows(); ++r) {
        GENIEX_TRY(quant::dequantize_row(
            n.desc.dtype, std::span<const uint8_t>(src + sz(r) * row, row),
            std::span<float>(c.f32[id]).subspan(sz(r * n.desc.ne[0]), sz(n.desc.ne[0]))));
      }
    }
  }
  c.act_q.resize(sz(s.act));
  c.act_scale.resize(sz(s.tokens));
  c.kv_scratch.resize(sz(s.kv));
  c.iota.resize(sz(s.keys));
  for (size_t i = 0; i < c.iota.size(); ++i) c.iota[i] = static_cast<int32_t>(i);
  c.bytes = bytes;
  return c;
}

}  // namespace geniex::npu_ref
