#include "graph/op.h"

namespace geniex::graph {

std::string_view op_name(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbedding: return "Embedding";
    case OpKind::kMatMul: return "MatMul";
    case OpKind::kRmsNorm: return "RmsNorm";
    case OpKind::kRope: return "Rope";
    case OpKind::kAttention: return "Attention";
    case OpKind::kSoftmax: return "Softmax";
    case OpKind::kGelu: return "Gelu";
    case OpKind::kSilu: return "Silu";
    case OpKind::kMul: return "Mul";
    case OpKind::kAdd: return "Add";
    case OpKind::kScale: return "Scale";
    case OpKind::kSoftcap: return "Softcap";
    case OpKind::kGlu: return "Glu";
    case OpKind::kReshape: return "Reshape";
    case OpKind::kGetRows: return "GetRows";
    case OpKind::kCacheWrite: return "CacheWrite";
    case OpKind::kHadamard: return "Hadamard";
    case OpKind::kShortConv: return "ShortConv";
    case OpKind::kShortConvState: return "ShortConvState";
    case OpKind::kLayerNorm: return "LayerNorm";
    case OpKind::kGeluErf: return "GeluErf";
  }
  return "Unknown";
}

std::string TensorDesc::to_string() const {
  std::string s(ggml_type_name(dtype));
  s += "[";
  for (int i = 0; i < 4; ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(ne[static_cast<size_t>(i)]);
  }
  return s + "]";
}

TensorDesc make_desc(GgmlType dtype, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
  return TensorDesc{dtype, {ne0, ne1, ne2, ne3}};
}

}  // namespace geniex::graph
