#include "models/forward_graph.h"

#include <map>
#include <string>
#include <utility>

namespace geniex::models {
namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

// Adds nodes to a ForwardGraph, deduplicating weight nodes per tensor.
class Builder {
 public:
  Builder(ForwardGraph& fg, const ModelConfig& cfg) : fg_(fg), cfg_(cfg) {}

  NodeId weight(const gguf::TensorInfo* t) { return weight_rows(t, 0, 0); }

  // Rows [r0, r0 + n) of a 2-D tensor as a weight of its own (n = 0: the whole tensor).
  NodeId weight_rows(const gguf::TensorInfo* t, uint64_t r0, uint64_t n) {
    const auto key = std::make_pair(t, r0 * 2 + (n == 0 ? 0 : 1));
    auto it = weight_nodes_.find(key);
    if (it != weight_nodes_.end()) return it->second;
    const auto ne = [&](int i) { return static_cast<int64_t>(t->ne[static_cast<size_t>(i)]); };
    graph::TensorDesc d = graph::make_desc(t->type, ne(0), ne(1), ne(2), ne(3));
    std::string name = t->name;
    if (n != 0) {
      d.ne[1] = static_cast<int64_t>(n);
      name += "[" + std::to_string(r0) + ":" + std::to_string(r0 + n) + "]";
    }
    const NodeId id = fg_.graph.add_weight(d, std::move(name));
    weight_nodes_.emplace(key, id);
    fg_.weights.push_back({id, t, r0, n});
    return id;
  }

  // Ops are named after their stage ("layer 3") unless given a name (a matmul: its weight),
  // so placement notes and errors say where an op sits.
  Result<NodeId> op(OpKind kind, const std::vector<NodeId>& in, const OpParams& p = {},
                    std::string name = {}) {
    if (name.empty()) name = fg_.graph.stage_label(fg_.graph.current_stage());
    return fg_.graph.add_op(kind, in, p, std::move(name));
  }

  // x·W (+ b when given).
  Result<NodeId> linear(NodeId x, const gguf::TensorInfo* w, const gguf::TensorInfo* b) {
    GENIEX_ASSIGN_OR_RETURN(NodeId y, op(OpKind::kMatMul, {weight(w), x}, {}, w->name));
    if (b == nullptr) return y;
    return op(OpKind::kAdd, {y, weight(b)});
  }

  Result<NodeId> rms_norm(NodeId x, const gguf::TensorInfo* w) {
    OpParams p;
    p.eps = cfg_.rms_eps;
    return op(OpKind::kRmsNorm, {x, weight(w)}, p);
  }

  // Walsh-Hadamard blocks of n over x (n = 0: x itself).
  Result<NodeId> hadamard(NodeId x, int32_t n) {
    if (n == 0) return x;
    OpParams p;
    p.hadamard_n = n;
    return op(OpKind::kHadamard, {x}, p);
  }

  Result<NodeId> reshape(NodeId x, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    OpParams p;
    p.ne = {ne0, ne1, ne2, 1};
    return op(OpKind::kReshape, {x}, p);
  }

 private:
  ForwardGraph& fg_;
  const ModelConfig& cfg_;
  std::map<std::pair<const gguf::TensorInfo*, uint64_t>, NodeId> weight_nodes_;
};

// One attention block on the normalized stream x [n_embd, T]; returns [n_embd, T] (before any
// post norm / residual).
Result<NodeId> attention_block(Builder& b, ForwardGraph& fg, const ModelConfig& cfg,
                               const LayerWeights& lw, uint32_t il, NodeId x, NodeId pos,
                               int64_t T) {
  const int64_t dk = cfg.head_dim_k;
  const int64_t dv = cfg.head_dim_v;
  const int64_t n_head = cfg.n_head;
  const int64_t n_kv = cfg.n_head_kv_at(il);

  GENIEX_ASSIGN_OR_RETURN(NodeId q, b.linear(x, lw.attn_q, lw.attn_q_b));
  GENIEX_ASSIGN_OR_RETURN(NodeId k, b.linear(x, lw.attn_k, lw.attn_k_b));
  GENIEX_ASSIGN_OR_RETURN(NodeId v, b.linear(x, lw.attn_v, lw.attn_v_b));
  GENIEX_ASSIGN_OR_RETURN(q, b.reshape(q, dk, n_head, T));
  GENIEX_ASSIGN_OR_RETURN(k, b.reshape(k, dk, n_kv, T));
  GENIEX_ASSIGN_OR_RETURN(v, b.reshape(v, dv, n_kv, T));

  if (cfg.has_qk_norm) {  // per-head RMSNorm over head_dim, before RoPE
    GENIEX_ASSIGN_OR_RETURN(q, b.rms_norm(q, lw.attn_q_norm));
    GENIEX_ASSIGN_OR_RETURN(k, b.rms_norm(k, lw.attn_k_norm));
  }

  OpParams rp;
  rp.rope.mode =
      cfg.rope.mode == RopeMode::kNeox ? graph::RopeMode::kNeox : graph::RopeMode::kNormal;
  rp.rope.n_dims = static_cast<int32_t>(cfg.rope.n_rot);
  rp.rope.base = cfg.rope_base_at(il);
  rp.rope.freq_scale = cfg.rope_freq_scale_at(il);
  std::vector<NodeId> q_in = {q, pos};
  std::vector<NodeId> k_in = {k, pos};
  if (lw.rope_freqs != nullptr) {
    q_in.push_back(b.weight(lw.rope_freqs));
    k_in.push_back(b.weight(lw.rope_freqs));
  }
  GENIEX_ASSIGN_OR_RETURN(q, b.op(OpKind::kRope, q_in, rp));
  GENIEX_ASSIGN_OR_RETURN(k, b.op(OpKind::kRope, k_in, rp));

  OpParams ap;
  ap.attn.scale = cfg.attn_scale;
  ap.attn.causal = !fg.bidirectional;
  ap.attn.sliding_window = cfg.layer_is_sliding(il) ? static_cast<int32_t>(cfg.sliding_window) : 0;
  ap.attn.softcap = cfg.attn_logit_softcap;
  std::vector<NodeId> attn_in = {q, k, v, pos, pos};
  const KvRotation rot = fg.kv_rotation;
  if (!fg.k_cache.empty()) {  // write this batch into the cache, attend over the cache
    GENIEX_ASSIGN_OR_RETURN(q, b.hadamard(q, rot.k));
    GENIEX_ASSIGN_OR_RETURN(k, b.hadamard(k, rot.k));
    GENIEX_ASSIGN_OR_RETURN(v, b.hadamard(v, rot.v));
    GENIEX_ASSIGN_OR_RETURN(k, b.op(OpKind::kCacheWrite, {fg.k_cache[il], k, fg.kv_slots[il]}));
    fg.cache_write[il] = k;
    GENIEX_ASSIGN_OR_RETURN(v, b.op(OpKind::kCacheWrite, {fg.v_cache[il], v, fg.kv_slots[il]}));
    attn_in = {q, k, v, pos, fg.kv_pos[il], fg.kv_rows[il]};
    if (!fg.kv_seg.empty()) attn_in.push_back(fg.kv_seg[il]);
  } else if (fg.seq_seg != kNoNode) {  // several sequences in the batch, no cache
    attn_in = {q, k, v, pos, pos, fg.seq_rows, fg.seq_seg};
  }
  GENIEX_ASSIGN_OR_RETURN(NodeId a, b.op(OpKind::kAttention, attn_in, ap));
  if (!fg.k_cache.empty()) {
    GENIEX_ASSIGN_OR_RETURN(a, b.hadamard(a, rot.v));
  }
  GENIEX_ASSIGN_OR_RETURN(a, b.reshape(a, dv * n_head, T));
  return b.linear(a, lw.attn_output, lw.attn_output_b);
}

// LFM2's short-conv block on the normalized stream x [n_embd, T] (spec LFM2.md §1.3): in_proj
// gives B, C and x (three row ranges of one weight, taken as three matmuls), the conv runs over
// u = B * x with the sequence's state (fg.conv_state) or from zeros, y = C * conv, then out_proj.
Result<NodeId> conv_block(Builder& b, ForwardGraph& fg, const ModelConfig& cfg,
                          const LayerWeights& lw, uint32_t il, NodeId x) {
  const uint64_t e = cfg.n_embd;
  const gguf::TensorInfo* in = lw.conv_in_proj;
  GENIEX_ASSIGN_OR_RETURN(
      NodeId bg, b.op(OpKind::kMatMul, {b.weight_rows(in, 0, e), x}, {}, in->name + "[B]"));
  GENIEX_ASSIGN_OR_RETURN(
      NodeId cg, b.op(OpKind::kMatMul, {b.weight_rows(in, e, e), x}, {}, in->name + "[C]"));
  GENIEX_ASSIGN_OR_RETURN(
      NodeId xv, b.op(OpKind::kMatMul, {b.weight_rows(in, 2 * e, e), x}, {}, in->name + "[x]"));
  GENIEX_ASSIGN_OR_RETURN(NodeId u, b.op(OpKind::kMul, {bg, xv}));
  std::vector<NodeId> conv_in = {u, b.weight(lw.conv_kernel)};
  if (fg.conv_seq != kNoNode) {
    conv_in.push_back(fg.conv_state[il]);
    conv_in.push_back(fg.conv_seq);
  }
  GENIEX_ASSIGN_OR_RETURN(NodeId conv, b.op(OpKind::kShortConv, conv_in));
  if (fg.conv_seq != kNoNode) {  // after the conv, which reads the old state
    fg.conv_u[il] = u;
    GENIEX_ASSIGN_OR_RETURN(fg.conv_state_out[il],
                            b.op(OpKind::kShortConvState, {u, fg.conv_state[il], fg.conv_seq}));
  }
  GENIEX_ASSIGN_OR_RETURN(NodeId y, b.op(OpKind::kMul, {cg, conv}));
  return b.linear(y, lw.conv_out_proj, nullptr);
}

// Gated FFN on the normalized stream x [n_embd, T].
Result<NodeId> ffn_block(Builder& b, const ModelConfig& cfg, const LayerWeights& lw, NodeId x) {
  GENIEX_ASSIGN_OR_RETURN(NodeId gate, b.linear(x, lw.ffn_gate, lw.ffn_gate_b));
  GENIEX_ASSIGN_OR_RETURN(NodeId up, b.linear(x, lw.ffn_up, lw.ffn_up_b));
  OpParams gp;
  gp.glu = cfg.ffn_act == FfnActivation::kGeluTanh ? graph::GluActivation::kGeluTanh
                                                   : graph::GluActivation::kSilu;
  GENIEX_ASSIGN_OR_RETURN(NodeId g, b.op(OpKind::kGlu, {gate, up}, gp));
  return b.linear(g, lw.ffn_down, lw.ffn_down_b);
}

}  // namespace

KvRotation kv_rotation(const ModelConfig& cfg, GgmlType kv_type) {
  if (kv_type != GgmlType::kQ8_0 && kv_type != GgmlType::kQ4_0) return {};
  const int64_t dk = cfg.head_dim_k, dv = cfg.head_dim_v;
  KvRotation r;
  if (dk > 0 && dk % 64 == 0) {
    r.k = 64;
    while (dk % (2 * r.k) == 0 && 2 * r.k <= graph::kMaxHadamardN) r.k *= 2;
  }
  if (dv > 0 && dv % 64 == 0) r.v = 64;
  return r;
}

Result<ForwardGraph> build_forward_graph(const ModelConfig& cfg, const ModelWeights& w,
                                         int32_t n_tokens) {
  ForwardSpec spec;
  spec.n_tokens = n_tokens;
  return build_forward_graph(cfg, w, spec);
}

Result<ForwardGraph> build_forward_graph(const ModelConfig& cfg, const ModelWeights& w,
                                         const ForwardSpec& spec) {
  const int32_t n_tokens = spec.n_tokens;
  if (n_tokens < 1) {
    return invalid_argument("build_forward_graph: n_tokens must be >= 1, got " +
                            std::to_string(n_tokens));
  }
  if (w.layers.size() != cfg.n_layer || w.tok_embd == nullptr || w.output == nullptr ||
      w.output_norm == nullptr) {
    return invalid_argument("build_forward_graph: weights do not match the config (" +
                            std::to_string(w.layers.size()) + " layers bound, config has " +
                            std::to_string(cfg.n_layer) + ")");
  }
  const int64_t T = n_tokens;
  ForwardGraph fg;
  fg.n_tokens = n_tokens;
  fg.n_vocab = cfg.n_vocab;
  Builder b(fg, cfg);

  fg.token_ids = fg.graph.add_input(graph::make_desc(GgmlType::kI32, T), "token_ids");
  fg.positions = fg.graph.add_input(graph::make_desc(GgmlType::kI32, T), "positions");
  if (!spec.kv_list.empty()) {
    fg.kv_rotation = spec.kv_rotation.value_or(kv_rotation(cfg, spec.kv_type));
    if (spec.kv_list.size() != cfg.n_layer || spec.kv_state_rows.size() != cfg.n_layer) {
      return invalid_argument("build_forward_graph: the KV lists need one entry per layer (" +
                              std::to_string(cfg.n_layer) + ")");
    }
    const size_t nl = cfg.n_layer;
    for (auto* v : {&fg.kv_slots, &fg.kv_rows, &fg.kv_pos, &fg.k_cache, &fg.v_cache,
                    &fg.cache_write, &fg.conv_state, &fg.conv_state_out, &fg.conv_u}) {
      v->assign(nl, kNoNode);
    }
    if (spec.segments) fg.kv_seg.assign(nl, kNoNode);
    if (cfg.has_recurrent_state()) {
      if (spec.conv_slots < 1) {
        return invalid_argument("build_forward_graph: conv_slots must be >= 1");
      }
      fg.conv_seq = fg.graph.add_input(graph::make_desc(GgmlType::kI32, T), "conv_seq");
    }
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      const std::string l = "." + std::to_string(il);
      if (cfg.layer_is_conv(il)) {
        fg.conv_state[il] = fg.graph.add_input(
            graph::make_desc(GgmlType::kF32, cfg.n_embd, cfg.conv_taps - 1, spec.conv_slots),
            "conv_state" + l);
        continue;
      }
      const int64_t n_list = spec.kv_list[il];
      const int64_t rows = spec.kv_state_rows[il];
      if (n_list < 1 || rows < 1) {
        return invalid_argument("build_forward_graph: layer " + std::to_string(il) +
                                " has an empty KV list or state");
      }
      fg.kv_slots[il] = fg.graph.add_input(graph::make_desc(GgmlType::kI32, T), "kv_slots" + l);
      fg.kv_rows[il] = fg.graph.add_input(graph::make_desc(GgmlType::kI32, n_list), "kv_rows" + l);
      fg.kv_pos[il] = fg.graph.add_input(graph::make_desc(GgmlType::kI32, n_list), "kv_pos" + l);
      if (spec.segments) {
        fg.kv_seg[il] = fg.graph.add_input(graph::make_desc(GgmlType::kI32, 2, T), "kv_seg" + l);
      }
      const int64_t n_kv_head = cfg.n_head_kv_at(il);
      fg.k_cache[il] = fg.graph.add_state(
          graph::make_desc(spec.kv_type, cfg.head_dim_k, n_kv_head, rows), "cache_k" + l);
      fg.v_cache[il] = fg.graph.add_state(
          graph::make_desc(spec.kv_type, cfg.head_dim_v, n_kv_head, rows), "cache_v" + l);
    }
  }
  fg.bidirectional = spec.bidirectional;
  if (spec.batch_segments) {
    if (!spec.kv_list.empty() || cfg.has_recurrent_state()) {
      return invalid_argument(
          "build_forward_graph: batch segments need a model without recurrent state and no KV "
          "cache");
    }
    fg.seq_rows = fg.graph.add_input(graph::make_desc(GgmlType::kI32, T), "seq_rows");
    fg.seq_seg = fg.graph.add_input(graph::make_desc(GgmlType::kI32, 2, T), "seq_seg");
  }
  fg.n_outputs = spec.n_outputs < 0 ? n_tokens : spec.n_outputs;
  if (spec.n_outputs >= 0) {
    if (spec.n_outputs < 1 || spec.n_outputs > n_tokens) {
      return invalid_argument("build_forward_graph: n_outputs " + std::to_string(spec.n_outputs) +
                              " outside [1, " + std::to_string(n_tokens) + "]");
    }
    fg.output_rows =
        fg.graph.add_input(graph::make_desc(GgmlType::kI32, spec.n_outputs), "output_rows");
  }

  // Placement stages: the embedding, one per layer, the output head.
  fg.graph.set_batch_tokens(n_tokens);
  fg.graph.begin_stage(0, "embedding", graph::StageKind::kInput);
  GENIEX_ASSIGN_OR_RETURN(NodeId x, b.op(OpKind::kEmbedding, {b.weight(w.tok_embd), fg.token_ids}));
  if (cfg.embd_scale != 1.0f) {
    OpParams sp;
    sp.scale = cfg.embd_scale;
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kScale, {x}, sp));
  }
  if (spec.inject) {
    fg.embd_keep = fg.graph.add_input(graph::make_desc(GgmlType::kF32, 1, T), "embd_keep");
    fg.embd_inject =
        fg.graph.add_input(graph::make_desc(GgmlType::kF32, cfg.n_embd, T), "embd_inject");
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kMul, {x, fg.embd_keep}));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, fg.embd_inject}));
  }

  for (uint32_t il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& lw = w.layers[il];
    fg.graph.begin_stage(static_cast<int32_t>(il) + 1, "layer " + std::to_string(il),
                         graph::StageKind::kLayer, static_cast<int32_t>(il));
    GENIEX_ASSIGN_OR_RETURN(NodeId h, b.rms_norm(x, lw.attn_norm));
    if (cfg.layer_is_conv(il)) {
      GENIEX_ASSIGN_OR_RETURN(h, conv_block(b, fg, cfg, lw, il, h));
    } else {
      GENIEX_ASSIGN_OR_RETURN(h, attention_block(b, fg, cfg, lw, il, h, fg.positions, T));
    }
    if (il + 1 == cfg.n_layer && spec.n_outputs >= 0) {
      // Past the last attention, tokens no longer interact: only the rows whose logits are
      // wanted go through the last FFN and the LM head.
      GENIEX_ASSIGN_OR_RETURN(h, b.op(OpKind::kGetRows, {h, fg.output_rows}));
      GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kGetRows, {x, fg.output_rows}));
    }
    if (cfg.has_post_norms) {
      GENIEX_ASSIGN_OR_RETURN(h, b.rms_norm(h, lw.post_attention_norm));
    }
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, h}));

    GENIEX_ASSIGN_OR_RETURN(h, b.rms_norm(x, lw.ffn_norm));
    GENIEX_ASSIGN_OR_RETURN(h, ffn_block(b, cfg, lw, h));
    if (cfg.has_post_norms) {
      GENIEX_ASSIGN_OR_RETURN(h, b.rms_norm(h, lw.post_ffw_norm));
    }
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, h}));
  }

  fg.graph.begin_stage(static_cast<int32_t>(cfg.n_layer) + 1, "output", graph::StageKind::kOutput);
  GENIEX_ASSIGN_OR_RETURN(x, b.rms_norm(x, w.output_norm));
  if (spec.hidden_only) {
    fg.hidden = x;
    fg.logits = x;
    return fg;
  }
  GENIEX_ASSIGN_OR_RETURN(x, b.linear(x, w.output, w.output_b));
  if (cfg.final_logit_softcap > 0.0f) {
    OpParams cp;
    cp.scale = cfg.final_logit_softcap;
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kSoftcap, {x}, cp));
  }
  fg.logits = x;
  return fg;
}

void bind_forward_weights(const ForwardGraph& fg, graph::Bindings& bindings) {
  for (const auto& wb : fg.weights) {
    std::span<const uint8_t> bytes = wb.tensor->data;
    if (wb.n_rows != 0) {  // whole rows of a 2-D tensor (checked by the binder's shapes)
      const uint64_t row = ggml_row_bytes(wb.tensor->type, wb.tensor->ne[0]).value_or(0);
      bytes = bytes.subspan(wb.row_begin * row, wb.n_rows * row);
    }
    bindings.bind_weight(wb.node, wb.tensor->type, bytes);
  }
}

Result<std::vector<float>> run_forward_reference(const gguf::GgufFile& file,
                                                 std::span<const int32_t> ids) {
  if (ids.empty()) return invalid_argument("run_forward_reference: no token ids");
  GENIEX_ASSIGN_OR_RETURN(ModelConfig cfg, load_config(file));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= cfg.n_vocab) {
      return invalid_argument("run_forward_reference: token id " + std::to_string(ids[i]) +
                              " at index " + std::to_string(i) + " is outside [0, " +
                              std::to_string(cfg.n_vocab) + ")");
    }
  }
  GENIEX_ASSIGN_OR_RETURN(ModelWeights w, bind_weights(file, cfg));
  GENIEX_ASSIGN_OR_RETURN(ForwardGraph fg,
                          build_forward_graph(cfg, w, static_cast<int32_t>(ids.size())));

  std::vector<int32_t> pos(ids.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  std::vector<float> logits(ids.size() * cfg.n_vocab);

  graph::Bindings bindings;
  bindings.bind_input(fg.token_ids, ids);
  bindings.bind_input(fg.positions, std::span<const int32_t>(pos));
  bind_forward_weights(fg, bindings);
  bindings.bind_output(fg.logits, std::span<float>(logits));
  GENIEX_TRY(graph::run_reference(fg.graph, bindings));
  return logits;
}

}  // namespace geniex::models
