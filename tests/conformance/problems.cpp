// Which (subject, dtype) pairs the suite covers, and the dispatch to the problem builders.
#include "conformance/problems.h"

namespace geniex::conformance {

std::vector<Subject> all_subjects() {
  auto name = [](OpKind k) { return std::string(graph::op_name(k)); };
  std::vector<Subject> out;
  for (uint32_t id = 0; id < 64; ++id) {  // every weight type with a dequantizer / a dot
    const auto tr = ggml_type_traits(id);
    if (tr && quant::can_dequantize(tr->type)) out.push_back({name(OpKind::kEmbedding), tr->type});
  }
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = ggml_type_traits(id);
    if (tr && quant::can_vec_dot(tr->type)) out.push_back({name(OpKind::kMatMul), tr->type});
  }
  for (GgmlType t : {kF32, kF16}) out.push_back({name(OpKind::kRmsNorm), t});
  for (GgmlType t : {kF32, kF16}) out.push_back({name(OpKind::kLayerNorm), t});
  out.push_back({name(OpKind::kRope), kF32});
  for (GgmlType t : {kF32, kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    out.push_back({name(OpKind::kAttention), t});
  }
  for (OpKind k : {OpKind::kSoftmax, OpKind::kGelu, OpKind::kSilu, OpKind::kScale, OpKind::kSoftcap,
                   OpKind::kGlu, OpKind::kGetRows, OpKind::kHadamard, OpKind::kShortConv,
                   OpKind::kShortConvState, OpKind::kGeluErf}) {
    out.push_back({name(k), kF32});
  }
  for (OpKind k : {OpKind::kMul, OpKind::kAdd, OpKind::kReshape}) {
    for (GgmlType t : {kF32, kF16}) out.push_back({name(k), t});
  }
  for (GgmlType t : {kF32, kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    out.push_back({name(OpKind::kCacheWrite), t});
  }
  for (GgmlType t : {kF32, kF16}) out.push_back({"DecoderBlock", t});
  out.push_back({"TwoLayers", kF16});
  return out;
}

ProblemList make_problems(const Subject& s, const Target& tg) {
  const auto is = [&](OpKind k) { return s.name == graph::op_name(k); };
  if (is(OpKind::kMatMul)) return matmul_problems(s.dtype, tg);
  if (is(OpKind::kEmbedding)) return embedding_problems(s.dtype, tg);
  if (is(OpKind::kRmsNorm)) return rms_norm_problems(s.dtype, tg);
  if (is(OpKind::kLayerNorm)) return layer_norm_problems(s.dtype, tg);
  if (is(OpKind::kRope)) return rope_problems(tg);
  if (is(OpKind::kAttention)) return attention_problems(s.dtype, tg);
  if (is(OpKind::kCacheWrite)) return cache_write_problems(s.dtype, tg);
  if (is(OpKind::kGlu)) return glu_problems(tg);
  if (is(OpKind::kGetRows)) return get_rows_problems(tg);
  if (is(OpKind::kHadamard)) return hadamard_problems(tg);
  if (is(OpKind::kShortConv)) return short_conv_problems(OpKind::kShortConv, tg);
  if (is(OpKind::kShortConvState)) return short_conv_problems(OpKind::kShortConvState, tg);
  if (is(OpKind::kReshape)) return reshape_problems(s.dtype, tg);
  if (is(OpKind::kAdd)) return binary_problems(OpKind::kAdd, s.dtype, tg);
  if (is(OpKind::kMul)) return binary_problems(OpKind::kMul, s.dtype, tg);
  for (OpKind k : {OpKind::kSoftmax, OpKind::kGelu, OpKind::kGeluErf, OpKind::kSilu, OpKind::kScale,
                   OpKind::kSoftcap}) {
    if (is(k)) return unary_problems(k, tg);
  }
  if (s.name == "DecoderBlock") return decoder_block_problems(s.dtype, tg);
  if (s.name == "TwoLayers") return two_layers_problems(s.dtype, tg);
  return {};
}

}  // namespace geniex::conformance
