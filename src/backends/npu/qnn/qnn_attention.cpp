// The QNN HTP plugin's lowering of RoPE, CacheWrite and Attention. What depends on run-time
// indices is done on the host around the graph (qnn_host.h), so the HTP graph stays static and
// dense:
//  * RoPE: y = x * cos + rot(x) * sin, rot a Gather of each head's elements by a fixed
//    permutation, cos / sin [T, d] graph inputs the host computes from the positions.
//  * CacheWrite(state, src, slots): no QNN node; after execute the host writes src's rows (a
//    graph output, or the caller's input) into the state buffer at slots, rounded to its type.
//  * Attention over a key list of Tk entries: the rows the list names are gathered from the
//    state by the host (F32 / F16 -> F32; rows no query sees, or that this step rewrites, are
//    zeros), and a one-hot [Tk, T] selector MatMul puts this step's new rows in their entries.
//    Scores = MatMul(q, K^T) * scale (softcap: cap * tanh), plus an additive mask [Tq, Tk] the
//    host builds from q_pos / k_pos / q_seg (causal, sliding window, empty slots), Softmax, times
//    "query sees a key" (else zeros), MatMul with V. GQA: query heads grouped per kv head.
#include <memory>
#include <string>

#include "backends/npu/qnn/qnn_builder.h"
#include "core/dtype.h"

namespace geniex::npu_qnn {
namespace {

bool is_i32_input(const geniex_npu_tensor& t) {
  return t.role == GENIEX_NPU_TENSOR_INPUT && t.dtype == static_cast<uint32_t>(GgmlType::kI32);
}

bool is_kv_type(uint32_t dtype) {
  return dtype == static_cast<uint32_t>(GgmlType::kF32) ||
         dtype == static_cast<uint32_t>(GgmlType::kF16);
}

}  // namespace

Status Builder::lower_rope(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  if (op.n_inputs < 2 || op.n_inputs > 3) return invalid_argument("qnn-htp: Rope takes 2 or 3");
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* x, find(op.inputs[0]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* pos, find(op.inputs[1]));
  if (!is_i32_input(*pos)) return unimplemented("qnn-htp: Rope positions must be an I32 input");
  RopeTables r;
  r.d = x->ne[0];
  r.n_dims = op.params.rope_n_dims == 0 ? r.d : op.params.rope_n_dims;
  r.tokens = x->ne[2];
  r.neox = op.params.rope_mode == 1;
  r.base = op.params.rope_base;
  r.freq_scale = op.params.rope_freq_scale;
  if (r.n_dims <= 0 || r.n_dims % 2 != 0 || r.n_dims > r.d || x->ne[3] != 1 ||
      pos->ne[0] != r.tokens) {
    return invalid_argument("qnn-htp: Rope shapes (n_dims " + std::to_string(r.n_dims) +
                            ", head_dim " + std::to_string(r.d) + ")");
  }
  if (op.n_inputs == 3) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* ff, find(op.inputs[2]));
    if (ff->role != GENIEX_NPU_TENSOR_WEIGHT) {
      return unimplemented("qnn-htp: Rope freq_factors must be constant");
    }
    GENIEX_ASSIGN_OR_RETURN(auto* v, weight_values(*ff));
    if (static_cast<int64_t>(v->size()) != r.n_dims / 2) {
      return invalid_argument("qnn-htp: Rope freq_factors need n_dims / 2 values");
    }
    r.freq_factors = *v;
  }
  const auto d = static_cast<uint32_t>(r.d), t = static_cast<uint32_t>(r.tokens);
  GENIEX_ASSIGN_OR_RETURN(Made * mx, operand(x->id, qnn_dims(*x)));
  GENIEX_ASSIGN_OR_RETURN(Made * perm, int_constant(rope_permutation(r), {d}));
  GENIEX_ASSIGN_OR_RETURN(Made * rot, native(mx->dims));
  GENIEX_TRY(
      node(api::kOpGather, fresh("rope_rot"), {mx, perm}, rot, {scalar_i32(api::kParamAxis, 3)}));
  const uint32_t pos_id = pos->id;
  auto table = [r, pos_id](bool want_cos) {
    return [r, pos_id, want_cos](const Buffers& b, float* dst) -> Status {
      GENIEX_ASSIGN_OR_RETURN(auto p, b.ints(pos_id, r.tokens, "Rope positions"));
      std::vector<float> other(static_cast<size_t>(r.tokens * r.d));
      if (want_cos) {
        fill_rope_tables(r, p, dst, other.data());
      } else {
        fill_rope_tables(r, p, other.data(), dst);
      }
      return {};
    };
  };
  GENIEX_ASSIGN_OR_RETURN(Made * cos, host_input("rope_cos", {1, t, 1, d}, table(true)));
  GENIEX_ASSIGN_OR_RETURN(Made * sin, host_input("rope_sin", {1, t, 1, d}, table(false)));
  GENIEX_ASSIGN_OR_RETURN(Made * a, binary(api::kOpMultiply, mx, cos, mx->dims));
  GENIEX_ASSIGN_OR_RETURN(Made * b, binary(api::kOpMultiply, rot, sin, mx->dims));
  GENIEX_ASSIGN_OR_RETURN(Made * res, result(op, qnn_dims(out)));
  return binary(api::kOpAdd, a, b, mx->dims, res).status();
}

Status Builder::lower_cache_write(const geniex_npu_op& op) {
  if (op.n_inputs != 3) return invalid_argument("qnn-htp: CacheWrite takes 3 inputs");
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* st, find(op.inputs[0]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* src, find(op.inputs[1]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* slots, find(op.inputs[2]));
  if (st->role != GENIEX_NPU_TENSOR_STATE || !is_kv_type(st->dtype)) {
    return unimplemented("qnn-htp: CacheWrite needs an F32 / F16 state");
  }
  if (!is_i32_input(*slots)) return unimplemented("qnn-htp: CacheWrite slots must be an I32 input");
  if (src->ne[0] != st->ne[0] || src->ne[1] != st->ne[1] || src->ne[3] != 1 ||
      slots->ne[0] != src->ne[2]) {
    return invalid_argument("qnn-htp: CacheWrite shapes do not match");
  }
  if (wanted_.count(op.output) != 0) {
    return unimplemented("qnn-htp: a CacheWrite result (the state) cannot be a graph output");
  }
  HostWrite w;
  w.g.rows = st->ne[2];
  w.g.row_elems = st->ne[0] * st->ne[1];
  w.g.type = static_cast<GgmlType>(st->dtype);
  w.g.tokens = src->ne[2];
  w.state_id = st->id;
  w.slots_id = slots->id;
  w.what = "CacheWrite '" + std::string(st->name) + "'";
  if (src->role == GENIEX_NPU_TENSOR_INPUT) {
    w.src_input_id = src->id;
  } else {  // the new rows come back from the graph: a copy of src as a host-read output
    const Dims dims = {static_cast<uint32_t>(w.g.tokens), static_cast<uint32_t>(w.g.row_elems)};
    GENIEX_ASSIGN_OR_RETURN(Made * m, operand(src->id, dims));
    GENIEX_ASSIGN_OR_RETURN(Made * o,
                            create(fresh("new_rows"), dims, api::kAppRead, api::kFloat32));
    GENIEX_TRY(node(api::kOpReshape, fresh("new_rows_copy"), {m}, o));
    HostOutput h;
    h.io = io_of(0, *o);
    h.data.resize(elements(dims));
    c_.host_outputs.push_back(std::move(h));
    w.src_output = static_cast<int>(c_.host_outputs.size() - 1);
  }
  c_.writes.push_back(std::move(w));
  cache_writes_[op.output] = &op;
  return {};
}

Result<Made*> Builder::key_list(const geniex_npu_op& op, int which, int64_t tk,
                                std::shared_ptr<std::vector<uint8_t>> seen) {
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* kv, find(op.inputs[which]));
  const bool has_rows = op.n_inputs >= 6;
  const uint32_t rows_id = has_rows ? op.inputs[5] : 0;
  const auto hkv = static_cast<uint32_t>(kv->ne[1]), d = static_cast<uint32_t>(kv->ne[0]);
  const auto utk = static_cast<uint32_t>(tk);
  const Dims heads_first = {1, 0, 2};  // [Tk, Hkv, d] -> [Hkv, Tk, d]
  const geniex_npu_tensor* st = nullptr;
  const geniex_npu_tensor* src = nullptr;
  uint32_t slots_id = 0;
  if (auto it = cache_writes_.find(kv->id); it != cache_writes_.end()) {
    GENIEX_ASSIGN_OR_RETURN(st, find(it->second->inputs[0]));
    GENIEX_ASSIGN_OR_RETURN(src, find(it->second->inputs[1]));
    slots_id = it->second->inputs[2];
  } else if (kv->role == GENIEX_NPU_TENSOR_STATE) {
    st = kv;
  }
  if (st == nullptr) {  // an activation: the list is its rows
    if (has_rows) return unimplemented("qnn-htp: Attention k_rows over activations");
    if (kv->ne[2] != tk) return invalid_argument("qnn-htp: Attention k / v rows != keys");
    GENIEX_ASSIGN_OR_RETURN(Made * m, operand(kv->id, {utk, hkv, d}));
    return transpose(m, heads_first);
  }
  if (!is_kv_type(st->dtype)) return unimplemented("qnn-htp: Attention over a quantized cache");
  if (!has_rows && st->ne[2] != tk) {
    return invalid_argument("qnn-htp: Attention without k_rows needs a state of Tk rows");
  }
  KeyGather g;
  g.tk = tk;
  g.rows = st->ne[2];
  g.row_elems = st->ne[0] * st->ne[1];
  g.type = static_cast<GgmlType>(st->dtype);
  g.tokens = src != nullptr ? src->ne[2] : 0;
  const uint32_t state_id = st->id;
  const uint64_t state_bytes =
      static_cast<uint64_t>(g.rows * g.row_elems) * (g.type == GgmlType::kF32 ? 4u : 2u);
  auto sel = std::make_shared<std::vector<float>>(static_cast<size_t>(tk * g.tokens));
  const std::string what = std::string(which == 1 ? "k" : "v") + " of '" + st->name + "'";
  auto fill_old = [=](const Buffers& b, float* dst) -> Status {
    GENIEX_ASSIGN_OR_RETURN(uint8_t * state, b.state(state_id, state_bytes, what));
    std::span<const int32_t> rows, slots;
    if (has_rows) {
      GENIEX_ASSIGN_OR_RETURN(rows, b.ints(rows_id, g.tk, "Attention k_rows"));
    }
    if (g.tokens > 0) {
      GENIEX_ASSIGN_OR_RETURN(slots, b.ints(slots_id, g.tokens, "CacheWrite slots"));
    }
    return gather_keys(g, state, rows, slots, *seen, dst, sel->data());
  };
  const auto row_elems = static_cast<uint32_t>(g.row_elems);
  GENIEX_ASSIGN_OR_RETURN(Made * old, host_input("kv_rows", {utk, row_elems}, fill_old));
  Made* list = old;
  if (src != nullptr) {
    const auto tokens = static_cast<uint32_t>(g.tokens);
    GENIEX_ASSIGN_OR_RETURN(
        Made * msel, host_input("kv_select", {utk, tokens}, [sel](const Buffers&, float* dst) {
          std::copy(sel->begin(), sel->end(), dst);
          return Status{};
        }));
    GENIEX_ASSIGN_OR_RETURN(Made * fresh_rows, operand(src->id, {tokens, row_elems}));
    GENIEX_ASSIGN_OR_RETURN(Made * placed, matmul(msel, fresh_rows, false, {utk, row_elems}));
    GENIEX_ASSIGN_OR_RETURN(list, binary(api::kOpAdd, old, placed, {utk, row_elems}));
  }
  GENIEX_ASSIGN_OR_RETURN(Made * r3, reshape(list, {utk, hkv, d}));
  return transpose(r3, heads_first);
}

Status Builder::lower_attention(const geniex_npu_op& op, const geniex_npu_tensor& out) {
  if (op.n_inputs < 5 || op.n_inputs > 7) return invalid_argument("qnn-htp: Attention inputs");
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* q, find(op.inputs[0]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* k, find(op.inputs[1]));
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* v, find(op.inputs[2]));
  for (uint32_t i = 3; i < op.n_inputs; ++i) {
    GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* t, find(op.inputs[i]));
    if (!is_i32_input(*t)) {
      return unimplemented("qnn-htp: Attention positions / rows / segments must be I32 inputs");
    }
  }
  GENIEX_ASSIGN_OR_RETURN(const geniex_npu_tensor* kpos, find(op.inputs[4]));
  const int64_t d = q->ne[0], hq = q->ne[1], tq = q->ne[2], hkv = k->ne[1], dv = v->ne[0];
  const int64_t tk = kpos->ne[0];
  if (k->ne[0] != d || v->ne[1] != hkv || hkv <= 0 || hq % hkv != 0 || q->ne[3] != 1) {
    return invalid_argument("qnn-htp: Attention shapes do not match");
  }
  const auto g = static_cast<uint32_t>(hq / hkv), uh = static_cast<uint32_t>(hkv);
  const auto utq = static_cast<uint32_t>(tq), utk = static_cast<uint32_t>(tk);
  const auto ud = static_cast<uint32_t>(d), udv = static_cast<uint32_t>(dv);
  // Host inputs in fill order: the mask (which also finds the keys no query sees), then K / V.
  AttentionMask am;
  am.tq = tq;
  am.tk = tk;
  am.causal = op.params.attn_causal != 0;
  am.window = op.params.attn_sliding_window;
  const uint32_t qpos_id = op.inputs[3], kpos_id = op.inputs[4];
  const uint32_t seg_id = op.n_inputs >= 7 ? op.inputs[6] : 0;
  const bool has_seg = op.n_inputs >= 7;
  auto seen = std::make_shared<std::vector<uint8_t>>();
  auto any = std::make_shared<std::vector<float>>(static_cast<size_t>(tq));
  GENIEX_ASSIGN_OR_RETURN(
      Made * mask, host_input("attn_mask", {1, 1, utq, utk}, [=](const Buffers& b, float* dst) {
        GENIEX_ASSIGN_OR_RETURN(auto qp, b.ints(qpos_id, am.tq, "Attention q_pos"));
        GENIEX_ASSIGN_OR_RETURN(auto kp, b.ints(kpos_id, am.tk, "Attention k_pos"));
        std::span<const int32_t> seg;
        if (has_seg) {
          GENIEX_ASSIGN_OR_RETURN(seg, b.ints(seg_id, 2 * am.tq, "Attention q_seg"));
        }
        return fill_attention_mask(am, qp, kp, seg, dst, any->data(), *seen);
      }));
  GENIEX_ASSIGN_OR_RETURN(Made * sees,
                          host_input("attn_any", {1, 1, utq, 1}, [any](const Buffers&, float* dst) {
                            std::copy(any->begin(), any->end(), dst);
                            return Status{};
                          }));
  GENIEX_ASSIGN_OR_RETURN(Made * keys, key_list(op, 1, tk, seen));
  GENIEX_ASSIGN_OR_RETURN(Made * values, key_list(op, 2, tk, seen));
  // q [d, Hq, Tq] -> [Tq, Hkv, G, d] -> [Hkv, G, Tq, d] -> [Hkv, G * Tq, d]
  GENIEX_ASSIGN_OR_RETURN(Made * mq, operand(q->id, {utq, uh, g, ud}));
  GENIEX_ASSIGN_OR_RETURN(mq, transpose(mq, {1, 2, 0, 3}));
  GENIEX_ASSIGN_OR_RETURN(mq, reshape(mq, {uh, g * utq, ud}));
  GENIEX_ASSIGN_OR_RETURN(Made * s, matmul(mq, keys, true, {uh, g * utq, utk}));
  const float cap = op.params.attn_softcap;
  if (cap > 0.0f) {
    GENIEX_ASSIGN_OR_RETURN(s, times(s, op.params.attn_scale / cap));
    GENIEX_ASSIGN_OR_RETURN(s, unary(api::kOpTanh, s));
    GENIEX_ASSIGN_OR_RETURN(s, times(s, cap));
  } else {
    GENIEX_ASSIGN_OR_RETURN(s, times(s, op.params.attn_scale));
  }
  const Dims s4 = {uh, g, utq, utk};
  GENIEX_ASSIGN_OR_RETURN(s, reshape(s, s4));
  GENIEX_ASSIGN_OR_RETURN(s, binary(api::kOpAdd, s, mask, s4));
  GENIEX_ASSIGN_OR_RETURN(Made * p, native(s4));
  GENIEX_TRY(node(api::kOpSoftmax, fresh("attn_softmax"), {s}, p,
                  {scalar_u32(api::kParamAxis, 3), scalar_f32(api::kParamBeta, 1.0f)}));
  GENIEX_ASSIGN_OR_RETURN(p, binary(api::kOpMultiply, p, sees, s4));
  GENIEX_ASSIGN_OR_RETURN(p, reshape(p, {uh, g * utq, utk}));
  GENIEX_ASSIGN_OR_RETURN(Made * o, matmul(p, values, false, {uh, g * utq, udv}));
  GENIEX_ASSIGN_OR_RETURN(o, reshape(o, {uh, g, utq, udv}));
  (void)out;
  GENIEX_ASSIGN_OR_RETURN(Made * r, result(op, {utq, uh, g, udv}));
  return transpose(o, {2, 0, 1, 3}, r).status();
}

}  // namespace geniex::npu_qnn
