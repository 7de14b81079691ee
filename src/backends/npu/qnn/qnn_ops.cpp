// The QNN HTP plugin's lowering of dense ops: each GenieX op of a graph becomes one or a few QNN
// nodes (qnn_builder.h). MatMul -> FullyConnected; Add / Mul -> ElementWiseAdd / Multiply;
// RmsNorm -> RmsNorm; Softmax -> Softmax (beta = scale); Scale / Softcap / Silu / Gelu / Glu from
// Multiply, Add, Sigmoid and Tanh (GELU is the tanh form, as the reference); Reshape -> Reshape;
// GetRows / Embedding -> Gather. RoPE, CacheWrite and Attention are in qnn_attention.cpp.
#include <cmath>
#include <string>

#include "backends/npu/qnn/qnn_builder.h"
#include "backends/npu/qnn/qnn_calibrate.h"
#include "core/dtype.h"

namespace geniex::npu_qnn {

Status Builder::add_op(const geniex_npu_op& op) {
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* out, find(op.output));
  switch (op.kind) {
    case GENIEX_NPU_OP_ADD:
    case GENIEX_NPU_OP_MUL:
    case GENIEX_NPU_OP_SOFTMAX:
    case GENIEX_NPU_OP_SCALE:
    case GENIEX_NPU_OP_SOFTCAP:
    case GENIEX_NPU_OP_SILU:
    case GENIEX_NPU_OP_GELU:
    case GENIEX_NPU_OP_GLU:
    case GENIEX_NPU_OP_RESHAPE: return lower_elementwise(op, *out);
    case GENIEX_NPU_OP_MATMUL: return lower_matmul(op, *out);
    case GENIEX_NPU_OP_RMS_NORM: return lower_rms_norm(op, *out);
    case GENIEX_NPU_OP_GET_ROWS:
    case GENIEX_NPU_OP_EMBEDDING: return lower_gather(op, *out);
    case GENIEX_NPU_OP_ROPE: return lower_rope(op, *out);
    case GENIEX_NPU_OP_CACHE_WRITE: return lower_cache_write(op);
    case GENIEX_NPU_OP_ATTENTION: return lower_attention(op, *out);
    default:
      return unimplemented("qnn-htp: op kind " + std::to_string(op.kind) +
                           " is not lowered to QNN");
  }
}

Result<Made*> Builder::activation(uint32_t glu, Made* x) {
  if (glu == 0) {  // SiLU: x * sigmoid(x)
    GENIEX_ASSIGN_OR_RETURN(Made * s, unary(api::kOpSigmoid, x));
    return binary(api::kOpMultiply, x, s, x->dims);
  }
  // GELU (tanh form): 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2 / pi)
  const float k = static_cast<float>(std::sqrt(2.0 / 3.14159265358979323846));
  GENIEX_ASSIGN_OR_RETURN(Made * x2, binary(api::kOpMultiply, x, x, x->dims));
  GENIEX_ASSIGN_OR_RETURN(Made * a, times(x2, 0.044715f * k));
  GENIEX_ASSIGN_OR_RETURN(a, plus(a, k));
  GENIEX_ASSIGN_OR_RETURN(Made * u, binary(api::kOpMultiply, x, a, x->dims));
  GENIEX_ASSIGN_OR_RETURN(Made * t, unary(api::kOpTanh, u));
  GENIEX_ASSIGN_OR_RETURN(Made * b, plus(t, 1.0f));
  GENIEX_ASSIGN_OR_RETURN(Made * hx, times(x, 0.5f));
  return binary(api::kOpMultiply, hx, b, x->dims);
}

Status Builder::lower_elementwise(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  const Dims od = qnn_dims(out);
  const uint32_t want =
      (op.kind == GENIEX_NPU_OP_ADD || op.kind == GENIEX_NPU_OP_MUL || op.kind == GENIEX_NPU_OP_GLU)
          ? 2
          : 1;
  if (op.n_inputs != want) {
    return invalid_argument("qnn-htp: op kind " + std::to_string(op.kind) + " takes " +
                            std::to_string(want) + " inputs");
  }
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* a, find(op.inputs[0]));
  if (op.kind == GENIEX_NPU_OP_RESHAPE) {
    GENIEX_ASSIGN_OR_RETURN(Made * x, operand(a->id, qnn_dims(*a)));
    GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
    return node(api::kOpReshape, fresh("reshape"), {x}, r);
  }
  GENIEX_ASSIGN_OR_RETURN(Made * x, operand(a->id, qnn_dims(*a)));
  Made* y = nullptr;
  if (want == 2) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* b, find(op.inputs[1]));
    GENIEX_ASSIGN_OR_RETURN(y, operand(b->id, qnn_dims(*b)));
  }
  switch (op.kind) {
    case GENIEX_NPU_OP_ADD:
    case GENIEX_NPU_OP_MUL: {
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return binary(op.kind == GENIEX_NPU_OP_ADD ? api::kOpAdd : api::kOpMultiply, x, y, od, r)
          .status();
    }
    case GENIEX_NPU_OP_SCALE: {
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return times(x, op.params.scale, r).status();
    }
    case GENIEX_NPU_OP_SOFTCAP: {  // cap * tanh(x / cap)
      if (!(op.params.scale > 0.0f)) return unimplemented("qnn-htp: Softcap needs a cap > 0");
      GENIEX_ASSIGN_OR_RETURN(Made * s, times(x, 1.0f / op.params.scale));
      GENIEX_ASSIGN_OR_RETURN(Made * t, unary(api::kOpTanh, s));
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return times(t, op.params.scale, r).status();
    }
    case GENIEX_NPU_OP_SOFTMAX: {
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return node(api::kOpSoftmax, fresh("softmax"), {x}, r,
                  {scalar_u32(api::kParamAxis, static_cast<uint32_t>(od.size() - 1)),
                   scalar_f32(api::kParamBeta, op.params.scale)});
    }
    case GENIEX_NPU_OP_SILU:
    case GENIEX_NPU_OP_GELU: {
      GENIEX_ASSIGN_OR_RETURN(Made * act, activation(op.kind == GENIEX_NPU_OP_SILU ? 0 : 1, x));
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return node(api::kOpReshape, fresh("copy"), {act}, r);
    }
    case GENIEX_NPU_OP_GLU: {
      if (op.params.glu != 0 && op.params.glu != 1) {
        return unimplemented("qnn-htp: Glu activation " + std::to_string(op.params.glu));
      }
      GENIEX_ASSIGN_OR_RETURN(Made * act, activation(static_cast<uint32_t>(op.params.glu), x));
      GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, od));
      return binary(api::kOpMultiply, act, y, od, r).status();
    }
    default: return internal_error("qnn-htp: lower_elementwise of kind " + std::to_string(op.kind));
  }
}

Status Builder::lower_matmul(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  if (op.n_inputs != 2) return invalid_argument("qnn-htp: MatMul takes 2 inputs");
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* w, find(op.inputs[0]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[1]));
  if (w->role != GENIEX_NPU_TENSOR_WEIGHT || w->ne[2] != 1 || w->ne[3] != 1) {
    return unimplemented("qnn-htp: MatMul needs a constant 2-D weight");
  }
  // FullyConnected: in [M, K] x weights [N, K] -> [M, N]; GenieX's w [K, N] (K contiguous) is
  // exactly QNN's [N, K]; activations [K, M, B2, B3] are M * B2 * B3 rows.
  const auto k = static_cast<uint32_t>(x->ne[0]);
  const auto rows = static_cast<uint32_t>(x->ne[1] * x->ne[2] * x->ne[3]);
  GENIEX_ASSIGN_OR_RETURN(Made * mx, operand(x->id, {rows, k}));
  const auto n = static_cast<uint32_t>(out.ne[0]);
  if (plan_.precision != Precision::kFp16 && !plan_.probe) {
    return lower_fc_quant(op, *w, mx, rows, n);
  }
  GENIEX_ASSIGN_OR_RETURN(Made * mw, operand(w->id, {static_cast<uint32_t>(w->ne[1]),
                                                     static_cast<uint32_t>(w->ne[0])}));
  GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, {rows, n}));
  GENIEX_TRY(node(api::kOpFullyConnected, fresh("fc"), {mx, mw}, mo));
  if (!plan_.probe) return {};
  GENIEX_TRY(probe(mx, range_key(*w, false)));
  return probe(mo, range_key(*w, true));
}

Status Builder::lower_rms_norm(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  if (op.n_inputs < 1 || op.n_inputs > 2) {
    return invalid_argument("qnn-htp: RmsNorm takes 1 or 2 inputs");
  }
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[0]));
  // As rows [n, ne0]: HTP's RmsNorm over the last axis of a rank-4 [1, T, H, d] tensor (a
  // per-head q / k norm) gave wrong values (NMSE 0.5 at d = 16); over rank 2 it is right.
  const auto e = static_cast<uint32_t>(x->ne[0]);
  const auto rows = static_cast<uint32_t>(x->ne[1] * x->ne[2] * x->ne[3]);
  GENIEX_ASSIGN_OR_RETURN(Made * mx, operand(x->id, {rows, e}));
  Made* mg = nullptr;
  if (op.n_inputs == 2) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* w, find(op.inputs[1]));
    if (w->role != GENIEX_NPU_TENSOR_WEIGHT || w->ne[0] != x->ne[0] || w->ne[1] != 1 ||
        w->ne[2] != 1 || w->ne[3] != 1) {
      return unimplemented("qnn-htp: RmsNorm needs a constant [ne0] weight");
    }
    GENIEX_ASSIGN_OR_RETURN(mg, operand(w->id, {e}));
  } else {
    GENIEX_ASSIGN_OR_RETURN(mg, constant(std::vector<float>(e, 1.0f), {e}));
  }
  (void)out;
  GENIEX_ASSIGN_OR_RETURN(Made * mo, result(op, {rows, e}));
  GENIEX_ASSIGN_OR_RETURN(api::Param axes, tensor_u32(api::kParamAxes, {1}));  // GenieX ne[0]
  return node(api::kOpRmsNorm, fresh("rms_norm"), {mx, mg}, mo,
              {scalar_f32(api::kParamEpsilon, op.params.eps), axes});
}

// GetRows {x [E, T], idx [n]} and Embedding {table [E, V], ids [T]}: Gather of rows (QNN axis 0
// of [rows, E]) by I32 indices from a graph input. Out-of-range indices: QNN's behaviour is not
// the reference's error, so the plugin checks them on the host first.
Status Builder::lower_gather(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  if (op.n_inputs != 2) return invalid_argument("qnn-htp: GetRows / Embedding take 2 inputs");
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[0]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* idx, find(op.inputs[1]));
  if (x->ne[2] != 1 || x->ne[3] != 1) {
    return unimplemented("qnn-htp: GetRows / Embedding of a 3-D / 4-D tensor");
  }
  if (idx->role != GENIEX_NPU_TENSOR_INPUT || idx->dtype != static_cast<uint32_t>(GgmlType::kI32)) {
    return unimplemented("qnn-htp: GetRows / Embedding indices must be an I32 graph input");
  }
  if (op.kind == GENIEX_NPU_OP_EMBEDDING && x->role != GENIEX_NPU_TENSOR_WEIGHT) {
    return unimplemented("qnn-htp: Embedding needs a constant table");
  }
  const auto e = static_cast<uint32_t>(x->ne[0]);
  const auto n_rows = static_cast<uint32_t>(x->ne[1]);
  const auto n = static_cast<uint32_t>(idx->ne[0]);
  GENIEX_ASSIGN_OR_RETURN(Made * table, operand(x->id, {n_rows, e}));
  GENIEX_ASSIGN_OR_RETURN(Made * ids, operand(idx->id, {n}));
  // Checked on the host before execute: the reference fails on an index out of range.
  c_.index_checks.push_back(
      {idx->id, n, n_rows, op.kind == GENIEX_NPU_OP_EMBEDDING ? "Embedding ids" : "GetRows idx"});
  GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, {n, static_cast<uint32_t>(out.ne[0])}));
  return node(api::kOpGather, fresh("gather"), {table, ids}, r, {scalar_i32(api::kParamAxis, 0)});
}

}  // namespace geniex::npu_qnn
