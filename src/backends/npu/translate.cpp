#include "backends/npu/translate.h"

#include <algorithm>

namespace geniex::backends::npu {
namespace {

using graph::Node;
using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

std::string who(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return "node " + std::to_string(id) + (n.name.empty() ? std::string() : " '" + n.name + "'");
}

geniex_npu_op_params to_npu_params(const graph::OpParams& p) {
  geniex_npu_op_params q{};
  q.eps = p.eps;
  q.scale = p.scale;
  q.rope_mode = p.rope.mode == graph::RopeMode::kNeox ? 1 : 0;
  q.rope_n_dims = p.rope.n_dims;
  q.rope_base = p.rope.base;
  q.rope_freq_scale = p.rope.freq_scale;
  q.attn_scale = p.attn.scale;
  q.attn_causal = p.attn.causal ? 1 : 0;
  q.attn_sliding_window = p.attn.sliding_window;
  q.attn_softcap = p.attn.softcap;
  q.glu = p.glu == graph::GluActivation::kGeluTanh ? 1 : 0;
  std::copy(p.ne.begin(), p.ne.end(), q.ne);
  return q;
}

}  // namespace

geniex_npu_op_kind to_npu_kind(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbedding: return GENIEX_NPU_OP_EMBEDDING;
    case OpKind::kMatMul: return GENIEX_NPU_OP_MATMUL;
    case OpKind::kRmsNorm: return GENIEX_NPU_OP_RMS_NORM;
    case OpKind::kRope: return GENIEX_NPU_OP_ROPE;
    case OpKind::kAttention: return GENIEX_NPU_OP_ATTENTION;
    case OpKind::kSoftmax: return GENIEX_NPU_OP_SOFTMAX;
    case OpKind::kGelu: return GENIEX_NPU_OP_GELU;
    case OpKind::kSilu: return GENIEX_NPU_OP_SILU;
    case OpKind::kMul: return GENIEX_NPU_OP_MUL;
    case OpKind::kAdd: return GENIEX_NPU_OP_ADD;
    case OpKind::kScale: return GENIEX_NPU_OP_SCALE;
    case OpKind::kSoftcap: return GENIEX_NPU_OP_SOFTCAP;
    case OpKind::kGlu: return GENIEX_NPU_OP_GLU;
    case OpKind::kReshape: return GENIEX_NPU_OP_RESHAPE;
    case OpKind::kGetRows: return GENIEX_NPU_OP_GET_ROWS;
    case OpKind::kCacheWrite: return GENIEX_NPU_OP_CACHE_WRITE;
    case OpKind::kHadamard:  // not in the plugin ABI (v1): placed elsewhere
    case OpKind::kShortConv:
    case OpKind::kShortConvState:
    case OpKind::kLayerNorm:  // not in the plugin ABI (v1): the vision encoder runs elsewhere
    case OpKind::kGeluErf: break;
  }
  return GENIEX_NPU_OP_COUNT;
}

uint32_t typed_input_dtype(const graph::Graph& g, NodeId id) {
  const Node& n = g.node(id);
  switch (n.op) {
    case OpKind::kMatMul:
    case OpKind::kEmbedding:
    case OpKind::kCacheWrite: return static_cast<uint32_t>(g.node(n.inputs[0]).desc.dtype);
    case OpKind::kAttention: return static_cast<uint32_t>(g.node(n.inputs[1]).desc.dtype);
    default: return static_cast<uint32_t>(GgmlType::kF32);
  }
}

void NpuGraphDesc::seal() {
  graph.struct_size = sizeof(geniex_npu_graph);
  graph.n_tensors = static_cast<uint32_t>(tensors.size());
  graph.tensors = tensors.data();
  graph.n_ops = static_cast<uint32_t>(ops.size());
  graph.ops = ops.data();
  graph.n_outputs = static_cast<uint32_t>(outputs.size());
  graph.outputs = outputs.data();
}

Result<NpuGraphDesc> translate_graph(const graph::Graph& g, const graph::BindingsAccess& b,
                                     const std::vector<NodeId>& outputs) {
  NpuGraphDesc d;
  d.tensors.reserve(g.size());
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    geniex_npu_tensor t{};
    t.id = id;
    t.dtype = static_cast<uint32_t>(n.desc.dtype);
    std::copy(n.desc.ne.begin(), n.desc.ne.end(), t.ne);
    t.name = n.name.c_str();
    switch (n.role) {
      case NodeRole::kInput: t.role = GENIEX_NPU_TENSOR_INPUT; break;
      case NodeRole::kState: t.role = GENIEX_NPU_TENSOR_STATE; break;
      case NodeRole::kOp: t.role = GENIEX_NPU_TENSOR_OP; break;
      case NodeRole::kWeight: {
        t.role = GENIEX_NPU_TENSOR_WEIGHT;
        auto it = b.weights().find(id);
        if (it == b.weights().end()) return invalid_argument(who(g, id) + ": weight is not bound");
        const auto row = ggml_row_bytes(n.desc.dtype, static_cast<uint64_t>(n.desc.ne[0]));
        const uint64_t need = row ? *row * static_cast<uint64_t>(n.desc.nrows()) : 0;
        if (!row || it->second.type != n.desc.dtype || it->second.bytes.size() != need) {
          return invalid_argument(who(g, id) + ": bound " +
                                  std::to_string(it->second.bytes.size()) + " bytes of " +
                                  std::string(ggml_type_name(it->second.type)) + ", " +
                                  n.desc.to_string() + " needs " + std::to_string(need));
        }
        t.data = it->second.bytes.data();
        t.data_bytes = need;
        d.weight_ptrs.push_back(t.data);
        break;
      }
    }
    d.tensors.push_back(t);
    if (n.role != NodeRole::kOp) continue;
    if (n.inputs.size() > GENIEX_NPU_MAX_OP_INPUTS) {
      return invalid_argument(who(g, id) + ": too many inputs for the NPU ABI");
    }
    geniex_npu_op op{};
    op.kind = to_npu_kind(n.op);
    op.output = id;
    op.n_inputs = static_cast<uint32_t>(n.inputs.size());
    std::copy(n.inputs.begin(), n.inputs.end(), op.inputs);
    op.params = to_npu_params(n.params);
    d.ops.push_back(op);
  }
  d.outputs.assign(outputs.begin(), outputs.end());
  d.graph.batch_tokens = g.batch_tokens();
  d.seal();
  return d;
}

}  // namespace geniex::backends::npu
