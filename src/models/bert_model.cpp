#include "models/bert_model.h"

#include <cmath>
#include <string>
#include <utility>

#include "models/tensor_binder.h"

namespace geniex::models {
namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

class BertBuilder {
 public:
  BertBuilder(BertGraph& bg, const BertConfig& cfg) : bg_(bg), cfg_(cfg) {}

  NodeId weight(const gguf::TensorInfo* t) {
    for (const auto& wb : bg_.weights) {
      if (wb.tensor == t) return wb.node;
    }
    const auto ne = [&](int i) { return static_cast<int64_t>(t->ne[static_cast<size_t>(i)]); };
    const NodeId id =
        bg_.graph.add_weight(graph::make_desc(t->type, ne(0), ne(1), ne(2), ne(3)), t->name);
    bg_.weights.push_back({id, t, 0, 0});
    return id;
  }

  Result<NodeId> op(OpKind kind, const std::vector<NodeId>& in, const OpParams& p = {},
                    std::string name = {}) {
    if (name.empty()) name = bg_.graph.stage_label(bg_.graph.current_stage());
    return bg_.graph.add_op(kind, in, p, std::move(name));
  }

  Result<NodeId> linear(NodeId x, const gguf::TensorInfo* w, const gguf::TensorInfo* b) {
    GENIEX_ASSIGN_OR_RETURN(NodeId y, op(OpKind::kMatMul, {weight(w), x}, {}, w->name));
    if (b == nullptr) return y;
    return op(OpKind::kAdd, {y, weight(b)});
  }

  Result<NodeId> layer_norm(NodeId x, const gguf::TensorInfo* w, const gguf::TensorInfo* b) {
    OpParams p;
    p.eps = cfg_.eps;
    return op(OpKind::kLayerNorm, {x, weight(w), weight(b)}, p);
  }

  Result<NodeId> reshape(NodeId x, int64_t ne0, int64_t ne1, int64_t ne2 = 1) {
    OpParams p;
    p.ne = {ne0, ne1, ne2, 1};
    return op(OpKind::kReshape, {x}, p);
  }

 private:
  BertGraph& bg_;
  const BertConfig& cfg_;
};

Result<uint32_t> get_u32(const gguf::GgufFile& f, const std::string& key) {
  GENIEX_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v == 0 || v > (1u << 30))
    return invalid_argument("models: " + f.name() + ": " + key + " = " + std::to_string(v) +
                            " is out of range");
  return static_cast<uint32_t>(v);
}

}  // namespace

bool is_bert(const gguf::GgufFile& file) {
  auto a = file.get_string("general.architecture");
  return a.ok() && *a == "bert";
}

Result<BertConfig> load_bert_config(const gguf::GgufFile& f) {
  BertConfig c;
  if (auto n = f.get_string("general.name"); n.ok()) c.name = *n;
  GENIEX_ASSIGN_OR_RETURN(c.n_embd, get_u32(f, "bert.embedding_length"));
  GENIEX_ASSIGN_OR_RETURN(c.n_layer, get_u32(f, "bert.block_count"));
  GENIEX_ASSIGN_OR_RETURN(c.n_head, get_u32(f, "bert.attention.head_count"));
  GENIEX_ASSIGN_OR_RETURN(c.n_ff, get_u32(f, "bert.feed_forward_length"));
  GENIEX_ASSIGN_OR_RETURN(c.context_length, get_u32(f, "bert.context_length"));
  GENIEX_ASSIGN_OR_RETURN(double eps, f.get_float("bert.attention.layer_norm_epsilon"));
  if (!(eps > 0.0 && eps < 1.0))
    return invalid_argument("models: " + f.name() + ": layer_norm_epsilon " + std::to_string(eps) +
                            " is out of range");
  c.eps = static_cast<float>(eps);
  if (c.n_embd % c.n_head != 0)
    return invalid_argument("models: " + f.name() + ": embedding length " +
                            std::to_string(c.n_embd) + " is not a multiple of " +
                            std::to_string(c.n_head) + " heads");
  if (auto p = f.get_uint("bert.pooling_type"); p.ok() && *p < 16) {
    c.pooling_type = static_cast<int32_t>(*p);
  }
  const gguf::TensorInfo* te = f.find_tensor("token_embd.weight");
  if (te == nullptr) return not_found("models: " + f.name() + ": token_embd.weight is missing");
  c.n_vocab = static_cast<uint32_t>(te->ne[1]);
  return c;
}

Result<BertWeights> bind_bert_weights(const gguf::GgufFile& file, const BertConfig& c) {
  Binder b(file);
  BertWeights w;
  const uint64_t e = c.n_embd;
  w.tok_embd = b.bind("token_embd.weight", {e, c.n_vocab});
  w.type_embd = file.find_tensor("token_types.weight");
  if (w.type_embd != nullptr && (w.type_embd->ne[0] != e || w.type_embd->ne[1] < 1))
    b.problem("token_types.weight: expected " + std::to_string(e) + " columns");
  w.pos_embd = b.bind("position_embd.weight", {e, c.context_length});
  w.embd_norm = b.bind("token_embd_norm.weight", {e});
  w.embd_norm_b = b.bind("token_embd_norm.bias", {e});
  w.layers.resize(c.n_layer);
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    BertLayerWeights& l = w.layers[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    l.q = b.bind(p + "attn_q.weight", {e, e});
    l.q_b = b.bind(p + "attn_q.bias", {e}, false);
    l.k = b.bind(p + "attn_k.weight", {e, e});
    l.k_b = b.bind(p + "attn_k.bias", {e}, false);
    l.v = b.bind(p + "attn_v.weight", {e, e});
    l.v_b = b.bind(p + "attn_v.bias", {e}, false);
    l.o = b.bind(p + "attn_output.weight", {e, e});
    l.o_b = b.bind(p + "attn_output.bias", {e}, false);
    l.attn_norm = b.bind(p + "attn_output_norm.weight", {e});
    l.attn_norm_b = b.bind(p + "attn_output_norm.bias", {e});
    l.up = b.bind(p + "ffn_up.weight", {e, c.n_ff});
    l.up_b = b.bind(p + "ffn_up.bias", {c.n_ff}, false);
    l.down = b.bind(p + "ffn_down.weight", {c.n_ff, e});
    l.down_b = b.bind(p + "ffn_down.bias", {e}, false);
    l.out_norm = b.bind(p + "layer_output_norm.weight", {e});
    l.out_norm_b = b.bind(p + "layer_output_norm.bias", {e});
  }
  GENIEX_TRY(b.status());
  return w;
}

Result<BertGraph> build_bert_graph(const BertConfig& cfg, const BertWeights& w, int32_t n_tokens) {
  if (n_tokens < 1) return invalid_argument("build_bert_graph: n_tokens must be >= 1");
  if (w.layers.size() != cfg.n_layer)
    return invalid_argument("build_bert_graph: weights do not match the config");
  const int64_t T = n_tokens;
  const int64_t E = cfg.n_embd;
  const int64_t H = cfg.n_head;
  const int64_t D = E / H;
  BertGraph bg;
  bg.n_tokens = n_tokens;
  BertBuilder b(bg, cfg);
  auto& g = bg.graph;
  bg.token_ids = g.add_input(graph::make_desc(GgmlType::kI32, T), "token_ids");
  bg.positions = g.add_input(graph::make_desc(GgmlType::kI32, T), "positions");
  bg.type_ids = g.add_input(graph::make_desc(GgmlType::kI32, T), "type_ids");
  bg.seq_rows = g.add_input(graph::make_desc(GgmlType::kI32, T), "seq_rows");
  bg.seq_seg = g.add_input(graph::make_desc(GgmlType::kI32, 2, T), "seq_seg");

  g.set_batch_tokens(n_tokens);
  g.begin_stage(0, "embedding", graph::StageKind::kInput);
  GENIEX_ASSIGN_OR_RETURN(NodeId x, b.op(OpKind::kEmbedding, {b.weight(w.tok_embd), bg.token_ids}));
  if (w.type_embd != nullptr) {
    GENIEX_ASSIGN_OR_RETURN(NodeId t,
                            b.op(OpKind::kEmbedding, {b.weight(w.type_embd), bg.type_ids}));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, t}));
  }
  GENIEX_ASSIGN_OR_RETURN(NodeId pe,
                          b.op(OpKind::kEmbedding, {b.weight(w.pos_embd), bg.positions}));
  GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {x, pe}));
  GENIEX_ASSIGN_OR_RETURN(x, b.layer_norm(x, w.embd_norm, w.embd_norm_b));

  for (uint32_t il = 0; il < cfg.n_layer; ++il) {
    const BertLayerWeights& l = w.layers[il];
    g.begin_stage(static_cast<int32_t>(il) + 1, "layer " + std::to_string(il),
                  graph::StageKind::kLayer, static_cast<int32_t>(il));
    GENIEX_ASSIGN_OR_RETURN(NodeId q, b.linear(x, l.q, l.q_b));
    GENIEX_ASSIGN_OR_RETURN(NodeId k, b.linear(x, l.k, l.k_b));
    GENIEX_ASSIGN_OR_RETURN(NodeId v, b.linear(x, l.v, l.v_b));
    GENIEX_ASSIGN_OR_RETURN(q, b.reshape(q, D, H, T));
    GENIEX_ASSIGN_OR_RETURN(k, b.reshape(k, D, H, T));
    GENIEX_ASSIGN_OR_RETURN(v, b.reshape(v, D, H, T));
    OpParams ap;
    ap.attn.scale = 1.0f / std::sqrt(static_cast<float>(D));
    ap.attn.causal = false;
    GENIEX_ASSIGN_OR_RETURN(
        NodeId a, b.op(OpKind::kAttention,
                       {q, k, v, bg.positions, bg.positions, bg.seq_rows, bg.seq_seg}, ap));
    GENIEX_ASSIGN_OR_RETURN(a, b.reshape(a, E, T));
    GENIEX_ASSIGN_OR_RETURN(a, b.linear(a, l.o, l.o_b));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {a, x}));
    GENIEX_ASSIGN_OR_RETURN(x, b.layer_norm(x, l.attn_norm, l.attn_norm_b));
    GENIEX_ASSIGN_OR_RETURN(NodeId h, b.linear(x, l.up, l.up_b));
    GENIEX_ASSIGN_OR_RETURN(h, b.op(OpKind::kGeluErf, {h}));
    GENIEX_ASSIGN_OR_RETURN(h, b.linear(h, l.down, l.down_b));
    GENIEX_ASSIGN_OR_RETURN(x, b.op(OpKind::kAdd, {h, x}));
    GENIEX_ASSIGN_OR_RETURN(x, b.layer_norm(x, l.out_norm, l.out_norm_b));
  }
  bg.hidden = x;
  return bg;
}

void bind_bert_weights(const BertGraph& bg, graph::Bindings& bindings) {
  for (const auto& wb : bg.weights) bindings.bind_weight(wb.node, wb.tensor->type, wb.tensor->data);
}

}  // namespace geniex::models
