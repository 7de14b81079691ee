#include "quantize/tensor_policy.h"

#include <algorithm>
#include <string_view>

namespace geniex::quantize {
namespace {

using FT = FileType;

enum class Category {
  kOther,
  kOutput,
  kTokenEmbd,
  kAttnQkv,
  kAttnKvB,
  kAttnV,
  kAttnK,
  kAttnQ,
  kAttnOutput,
  kFfnUp,
  kFfnGate,
  kFfnDown,
};

bool has(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

bool is_token_embd(std::string_view n) {
  return n == "token_embd.weight" || n == "per_layer_token_embd.weight";
}

Category category_of(std::string_view n) {
  if (n == "output.weight") return Category::kOutput;
  if (is_token_embd(n)) return Category::kTokenEmbd;
  if (has(n, "attn_qkv.weight")) return Category::kAttnQkv;
  if (has(n, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (has(n, "attn_v.weight")) return Category::kAttnV;
  if (has(n, "attn_k.weight")) return Category::kAttnK;
  if (has(n, "attn_q.weight")) return Category::kAttnQ;
  if (has(n, "attn_output.weight")) return Category::kAttnOutput;
  if (has(n, "ffn_up")) return Category::kFfnUp;
  if (has(n, "ffn_gate")) return Category::kFfnGate;
  if (has(n, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_attn_v_like(Category c) {
  return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB;
}

bool is_quantized(GgmlType t) {
  return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16 &&
         t != GgmlType::kF64 && t != GgmlType::kI8 && t != GgmlType::kI16 && t != GgmlType::kI32 &&
         t != GgmlType::kI64;
}

bool allows_quantization(const TensorDesc& t, const PolicyOptions& opts) {
  if (effective_dims(t) < 2) return false;
  const std::string_view n = t.name;
  if (!n.ends_with("weight")) return false;
  if (has(n, "_norm.weight")) return false;
  if (!opts.quantize_output && n == "output.weight") return false;
  static constexpr std::string_view kNever[] = {
      "ffn_gate_inp.weight",
      "ffn_gate_tid2eid.weight",
      "altup",
      "laurel",
      "per_layer_model_proj",
      "ssm_conv1d",
      "shortconv.conv.weight",
      "indexer.k_proj.weight",
      "indexer.q_proj.weight",
      "time_mix_first.weight",
      "time_mix_w0.weight",
      "time_mix_w1.weight",
      "time_mix_w2.weight",
      "time_mix_v0.weight",
      "time_mix_v1.weight",
      "time_mix_v2.weight",
      "time_mix_a0.weight",
      "time_mix_a1.weight",
      "time_mix_a2.weight",
      "time_mix_g1.weight",
      "time_mix_g2.weight",
      "time_mix_decay_w1.weight",
      "time_mix_decay_w2.weight",
      "time_mix_lerp_fused.weight",
      "attn_rel_b.weight",
      ".position_embd",
      "sam.pos_embd",
      "sam.neck.",
      "sam.net_",
      ".rel_pos",
      ".patch_embd",
      ".patch_merger",
      "a.rvq.codebook",
      "mm.a.code_embd",
  };
  for (std::string_view part : kNever) {
    if (has(n, part)) return false;
  }
  return n != "position_embd.weight" && n != "token_types.weight";
}

// "blk.N." -> N, else -1 (sscanf("blk.%d.") semantics for the names GGUF files use).
int layer_of(std::string_view n) {
  if (!n.starts_with("blk.")) return -1;
  size_t i = 4;
  bool neg = false;
  if (i < n.size() && (n[i] == '-' || n[i] == '+')) neg = n[i++] == '-';
  if (i >= n.size() || n[i] < '0' || n[i] > '9') return -1;
  long v = 0;
  while (i < n.size() && n[i] >= '0' && n[i] <= '9' && v < 100000000) v = v * 10 + (n[i++] - '0');
  return static_cast<int>(neg ? -v : v);
}

struct State {
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int n_ffn_down = 0;
  int i_ffn_down = 0;
  int i_ffn_gate = 0;
  int i_ffn_up = 0;
  bool tied_embeddings = true;
};

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

GgmlType mixture_type(State& qs, GgmlType new_type, const TensorDesc& t, const ModelShape& m,
                      FT ftype, Category cat, const PolicyOptions& opts) {
  const bool falcon = m.arch == "falcon";
  const int n_gqa = m.n_head_kv == 0 ? 0 : m.n_head / m.n_head_kv;
  auto layer = [&](int counter) {
    if (m.n_expert > 1) return layer_of(t.name);
    return counter;
  };
  if (cat == Category::kOutput || (qs.tied_embeddings && cat == Category::kTokenEmbd)) {
    if (opts.output_type) return *opts.output_type;
    const uint64_t qk = traits(new_type).block_size;
    if (falcon || t.ne[0] % qk != 0) return GgmlType::kQ8_0;
    if (new_type != GgmlType::kQ8_0) return GgmlType::kQ6_K;
    return new_type;
  }
  if (cat == Category::kTokenEmbd) {
    return opts.token_embd_type ? *opts.token_embd_type : new_type;
  }
  if (is_attn_v_like(cat)) {
    if (ftype == FT::kQ2_K) {
      new_type = n_gqa >= 4 ? GgmlType::kQ4_K : GgmlType::kQ3_K;
    } else if (ftype == FT::kQ3_K_M) {
      new_type = qs.i_attention_wv < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
    } else if (ftype == FT::kQ3_K_L) {
      new_type = GgmlType::kQ5_K;
    } else if ((ftype == FT::kIQ4_NL || ftype == FT::kIQ4_XS) && n_gqa >= 4) {
      new_type = GgmlType::kQ5_K;
    } else if ((ftype == FT::kQ4_K_M || ftype == FT::kQ5_K_M) &&
               use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) {
      new_type = GgmlType::kQ6_K;
    } else if (ftype == FT::kQ4_K_S && qs.i_attention_wv < 4) {
      new_type = GgmlType::kQ5_K;
    }
    if (m.n_expert == 8) new_type = GgmlType::kQ8_0;
    ++qs.i_attention_wv;
  } else if (cat == Category::kAttnK) {
    if (m.n_expert == 8) new_type = GgmlType::kQ8_0;
  } else if (cat == Category::kFfnDown) {
    const int i_layer = layer(qs.i_ffn_down);
    const int n_layer = qs.n_ffn_down;
    if (ftype == FT::kQ2_K) {
      new_type = GgmlType::kQ3_K;
    } else if (ftype == FT::kQ3_K_M) {
      new_type = i_layer < n_layer / 16                       ? GgmlType::kQ5_K
                 : !falcon || use_more_bits(i_layer, n_layer) ? GgmlType::kQ4_K
                                                              : GgmlType::kQ3_K;
    } else if (ftype == FT::kQ3_K_L) {
      new_type = falcon ? GgmlType::kQ4_K : GgmlType::kQ5_K;
    } else if (ftype == FT::kQ4_K_M) {
      if (falcon) {
        new_type = i_layer < n_layer / 16            ? GgmlType::kQ6_K
                   : use_more_bits(i_layer, n_layer) ? GgmlType::kQ5_K
                                                     : GgmlType::kQ4_K;
      } else if (use_more_bits(i_layer, n_layer)) {
        new_type = GgmlType::kQ6_K;
      }
    } else if (i_layer < n_layer / 8 && (ftype == FT::kIQ4_NL || ftype == FT::kIQ4_XS) &&
               !opts.has_imatrix) {
      new_type = GgmlType::kQ5_K;
    } else if (ftype == FT::kQ5_K_M && use_more_bits(i_layer, n_layer)) {
      new_type = GgmlType::kQ6_K;
    } else if (ftype == FT::kQ4_K_S && !falcon && i_layer < n_layer / 8) {
      new_type = GgmlType::kQ5_K;
    } else if ((ftype == FT::kQ4_0 || ftype == FT::kQ5_0) && opts.has_imatrix &&
               i_layer < n_layer / 8) {
      new_type = ftype == FT::kQ4_0 ? GgmlType::kQ4_1 : GgmlType::kQ5_1;
    }
    ++qs.i_ffn_down;
  } else if (cat == Category::kAttnOutput) {
    if (!falcon) {
      if (m.n_expert == 8) {
        if (ftype == FT::kQ2_K || ftype == FT::kQ3_K_S || ftype == FT::kQ3_K_M ||
            ftype == FT::kIQ4_NL || ftype == FT::kQ4_K_S || ftype == FT::kQ4_K_M ||
            ftype == FT::kIQ4_XS) {
          new_type = GgmlType::kQ5_K;
        }
      } else {
        if (ftype == FT::kQ2_K) {
          new_type = GgmlType::kQ3_K;
        } else if (ftype == FT::kQ3_K_M) {
          new_type = GgmlType::kQ4_K;
        } else if (ftype == FT::kQ3_K_L) {
          new_type = GgmlType::kQ5_K;
        }
      }
    } else if (ftype == FT::kQ3_K_L) {
      new_type = GgmlType::kQ4_K;
    }
  } else if (cat == Category::kAttnQkv) {
    if (ftype == FT::kQ3_K_M || ftype == FT::kQ3_K_L) {
      new_type = GgmlType::kQ4_K;
    } else if (ftype == FT::kQ4_K_M) {
      new_type = GgmlType::kQ5_K;
    } else if (ftype == FT::kQ5_K_M) {
      new_type = GgmlType::kQ6_K;
    }
  } else if (cat == Category::kFfnGate) {
    ++qs.i_ffn_gate;
  } else if (cat == Category::kFfnUp) {
    ++qs.i_ffn_up;
  }
  return new_type;
}

// Rows that do not divide the chosen type's block: llama.cpp's fallback table, then F16.
GgmlType fallback_type(const TensorDesc& t, GgmlType target, bool* fell_back) {
  const uint64_t ncols = t.ne[0];
  if (ncols % traits(target).block_size == 0) return target;
  *fell_back = true;
  GgmlType r = target;
  switch (target) {
    case GgmlType::kIQ4_XS: r = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K: r = GgmlType::kQ4_0; break;
    case GgmlType::kQ4_K: r = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: r = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: r = GgmlType::kQ8_0; break;
    default: break;
  }
  if (ncols % traits(r).block_size != 0) r = GgmlType::kF16;
  return r;
}

}  // namespace

uint32_t effective_dims(const TensorDesc& t) {
  for (uint32_t i = 4; i > 1; --i) {
    if (t.ne[i - 1] > 1) return i;
  }
  return 1;
}

std::vector<size_t> llama_tensor_order(const std::vector<TensorDesc>& tensors) {
  std::vector<size_t> idx(tensors.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name);
    const int lb = layer_of(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });
  return idx;
}

std::vector<TensorChoice> choose_types(const std::vector<TensorDesc>& tensors,
                                       const ModelShape& shape, const FileTypeInfo& ftype,
                                       const PolicyOptions& opts) {
  State qs;
  for (const TensorDesc& t : tensors) {
    const Category c = category_of(t.name);
    if (is_attn_v_like(c)) ++qs.n_attention_wv;
    if (c == Category::kOutput) qs.tied_embeddings = false;
  }
  qs.n_ffn_down = shape.n_layer;
  std::vector<TensorChoice> out;
  out.reserve(tensors.size());
  for (const TensorDesc& t : tensors) {
    TensorChoice ch;
    ch.type = t.type;
    ch.allows_quantization = allows_quantization(t, opts);
    if (!ch.allows_quantization) {
      out.push_back(ch);
      continue;
    }
    const Category c = category_of(t.name);
    if (opts.token_embd_type && c == Category::kTokenEmbd) {
      ch.type = *opts.token_embd_type;
    } else if (opts.output_type && c == Category::kOutput) {
      ch.type = *opts.output_type;
    } else {
      GgmlType nt = ftype.default_type;
      if (is_quantized(nt)) {
        if (!opts.pure) nt = mixture_type(qs, nt, t, shape, ftype.ftype, c, opts);
        nt = fallback_type(t, nt, &ch.fallback);
      }
      ch.type = nt;
    }
    out.push_back(ch);
  }
  return out;
}

}  // namespace geniex::quantize
