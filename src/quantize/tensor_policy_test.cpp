// llama_tensor_get_type's rules on a synthetic 8-layer model (the byte-level proof against
// llama-quantize itself is tests/python/test_quantize_cli.py).
#include "quantize/tensor_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quantize/file_type.h"

namespace geniex::quantize {
namespace {

std::vector<TensorDesc> model(int n_layer, uint64_t d, bool tied) {
  std::vector<TensorDesc> t;
  t.push_back({"token_embd.weight", 2, {d, 1000, 1, 1}, GgmlType::kF16});
  t.push_back({"output_norm.weight", 1, {d, 1, 1, 1}, GgmlType::kF32});
  if (!tied) t.push_back({"output.weight", 2, {d, 1000, 1, 1}, GgmlType::kF16});
  for (int i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                          "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) {
      t.push_back({p + n, 2, {d, d, 1, 1}, GgmlType::kF16});
    }
    t.push_back({p + "attn_norm.weight", 1, {d, 1, 1, 1}, GgmlType::kF32});
  }
  return t;
}

GgmlType type_of(const std::vector<TensorDesc>& t, const std::vector<TensorChoice>& c,
                 const std::string& name) {
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].name == name) return c[i].type;
  }
  ADD_FAILURE() << name;
  return GgmlType::kF32;
}

TEST(QuantizePolicy, Q4KMBumpsAttnVAndFfnDownByLayer) {
  const auto t = model(8, 256, false);
  const ModelShape shape{"llama", 8, 8, 8, 0};
  const auto c = choose_types(t, shape, *parse_file_type("q4_k_m"), {});
  EXPECT_EQ(type_of(t, c, "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, c, "token_embd.weight"), GgmlType::kQ4_K);
  EXPECT_EQ(type_of(t, c, "output_norm.weight"), GgmlType::kF32);
  // use_more_bits(i, 8): i < 1, i >= 7, or (i - 1) % 3 == 2 -> layers 0, 3, 6, 7.
  for (int i = 0; i < 8; ++i) {
    const bool more = i == 0 || i == 3 || i == 6 || i == 7;
    const std::string p = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(type_of(t, c, p + "attn_v.weight"), more ? GgmlType::kQ6_K : GgmlType::kQ4_K) << i;
    EXPECT_EQ(type_of(t, c, p + "ffn_down.weight"), more ? GgmlType::kQ6_K : GgmlType::kQ4_K) << i;
    EXPECT_EQ(type_of(t, c, p + "attn_q.weight"), GgmlType::kQ4_K);
  }
}

TEST(QuantizePolicy, TiedEmbeddingsTakeTheOutputType) {
  const auto t = model(2, 256, true);
  const ModelShape shape{"gemma3", 2, 4, 1, 0};
  EXPECT_EQ(type_of(t, choose_types(t, shape, *parse_file_type("Q4_0"), {}), "token_embd.weight"),
            GgmlType::kQ6_K);
  EXPECT_EQ(type_of(t, choose_types(t, shape, *parse_file_type("Q8_0"), {}), "token_embd.weight"),
            GgmlType::kQ8_0);
  PolicyOptions pure;
  pure.pure = true;
  EXPECT_EQ(type_of(t, choose_types(t, shape, *parse_file_type("Q4_0"), pure), "token_embd.weight"),
            GgmlType::kQ4_0);
}

TEST(QuantizePolicy, RowsThatDoNotFitFallBack) {
  const auto t = model(2, 96, false);  // 96 % 256 != 0, 96 % 32 == 0
  const ModelShape shape{"llama", 2, 2, 2, 0};
  const auto c = choose_types(t, shape, *parse_file_type("Q4_K_S"), {});
  EXPECT_EQ(type_of(t, c, "blk.1.attn_q.weight"), GgmlType::kQ5_0);
  EXPECT_TRUE(c[3].fallback || c[4].fallback);
  EXPECT_EQ(type_of(t, c, "output.weight"), GgmlType::kQ8_0);
  const auto c6 = choose_types(t, shape, *parse_file_type("Q6_K"), {});
  EXPECT_EQ(type_of(t, c6, "blk.1.attn_q.weight"), GgmlType::kQ8_0);
  const auto t2 = model(1, 40, false);  // not even a multiple of 32 -> F16
  EXPECT_EQ(
      type_of(t2, choose_types(t2, shape, *parse_file_type("Q4_K_M"), {}), "blk.0.attn_q.weight"),
      GgmlType::kF16);
}

TEST(QuantizePolicy, OverridesAndLeaveOutput) {
  const auto t = model(2, 256, false);
  const ModelShape shape{"llama", 2, 2, 2, 0};
  PolicyOptions o;
  o.output_type = GgmlType::kQ8_0;
  o.token_embd_type = GgmlType::kQ5_0;
  auto c = choose_types(t, shape, *parse_file_type("Q4_K_M"), o);
  EXPECT_EQ(type_of(t, c, "output.weight"), GgmlType::kQ8_0);
  EXPECT_EQ(type_of(t, c, "token_embd.weight"), GgmlType::kQ5_0);
  PolicyOptions leave;
  leave.quantize_output = false;
  c = choose_types(t, shape, *parse_file_type("Q4_K_M"), leave);
  EXPECT_EQ(type_of(t, c, "output.weight"), GgmlType::kF16);
}

TEST(QuantizePolicy, TensorOrderIsByLayerThenName) {
  std::vector<TensorDesc> t = {{"blk.10.a.weight", 2, {}, GgmlType::kF32},
                               {"blk.2.b.weight", 2, {}, GgmlType::kF32},
                               {"output.weight", 2, {}, GgmlType::kF32},
                               {"blk.2.a.weight", 2, {}, GgmlType::kF32},
                               {"token_embd.weight", 2, {}, GgmlType::kF32}};
  const auto o = llama_tensor_order(t);
  ASSERT_EQ(o.size(), 5u);
  EXPECT_EQ(t[o[0]].name, "output.weight");
  EXPECT_EQ(t[o[1]].name, "token_embd.weight");
  EXPECT_EQ(t[o[2]].name, "blk.2.a.weight");
  EXPECT_EQ(t[o[3]].name, "blk.2.b.weight");
  EXPECT_EQ(t[o[4]].name, "blk.10.a.weight");
}

TEST(QuantizePolicy, FileTypeNames) {
  EXPECT_EQ(parse_file_type("q4_k")->name, "Q4_K_M");
  EXPECT_EQ(static_cast<uint32_t>(parse_file_type("Q4_K_M")->ftype), 15u);
  EXPECT_FALSE(parse_file_type("Q4_K_X").ok());
  EXPECT_EQ(*parse_tensor_type("q6_k"), GgmlType::kQ6_K);
  EXPECT_FALSE(parse_tensor_type("iq2_xxs").ok());
}

}  // namespace
}  // namespace geniex::quantize
