// Shape inference and validation of Graph::add_op.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/graph.h"

namespace geniex::graph {
namespace {

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kI32 = GgmlType::kI32;

TEST(GraphShape, MatMulInfersNByM) {
  Graph g;
  NodeId w = g.add_weight(make_desc(GgmlType::kQ4_0, 64, 10), "w");
  NodeId x = g.add_input(make_desc(kF32, 64, 3), "x");
  auto y = g.add_op(OpKind::kMatMul, {w, x});
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(g.node(*y).desc, make_desc(kF32, 10, 3));
  EXPECT_EQ(*y, 2u);
}

TEST(GraphShape, MatMulKMismatchNamesOpAndShapes) {
  Graph g;
  NodeId w = g.add_weight(make_desc(GgmlType::kQ8_0, 64, 10), "w");
  NodeId x = g.add_input(make_desc(kF32, 32, 3), "x");
  auto y = g.add_op(OpKind::kMatMul, {w, x});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
  const std::string m = y.status().message();
  EXPECT_NE(m.find("MatMul"), std::string::npos) << m;
  EXPECT_NE(m.find("Q8_0[64, 10, 1, 1]"), std::string::npos) << m;
  EXPECT_NE(m.find("K mismatch"), std::string::npos) << m;
}

TEST(GraphShape, MatMulRejectsPartialBlocksAndUnsupportedTypes) {
  Graph g;
  NodeId w = g.add_weight(make_desc(GgmlType::kQ4_K, 64, 4), "w");  // 64 < 256-element block
  NodeId x = g.add_input(make_desc(kF32, 64, 1), "x");
  EXPECT_EQ(g.add_op(OpKind::kMatMul, {w, x}).status().code(), StatusCode::kInvalidArgument);
  NodeId w2 = g.add_weight(make_desc(GgmlType::kI64, 64, 4), "w2");
  EXPECT_EQ(g.add_op(OpKind::kMatMul, {w2, x}).status().code(), StatusCode::kUnimplemented);
}

TEST(GraphShape, RejectsUnknownNodeAndWrongInputCount) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 8), "x");
  auto bad_id = g.add_op(OpKind::kSilu, {x + 5});
  EXPECT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("does not exist"), std::string::npos);
  auto two = g.add_op(OpKind::kSilu, {x, x});
  EXPECT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("expects 1 inputs"), std::string::npos);
}

TEST(GraphShape, HadamardNeedsAPowerOfTwoDividingTheRow) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 256, 4, 3), "x");
  OpParams p;
  for (int32_t n : {2, 64, 256}) {
    p.hadamard_n = n;
    auto y = g.add_op(OpKind::kHadamard, {x}, p);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    EXPECT_EQ(g.node(*y).desc, make_desc(kF32, 256, 4, 3));
  }
  for (int32_t n : {0, 1, 3, 96, 512, -64}) {
    p.hadamard_n = n;
    auto y = g.add_op(OpKind::kHadamard, {x}, p);
    ASSERT_FALSE(y.ok()) << n;
    EXPECT_NE(y.status().message().find("power of two"), std::string::npos) << y.status().message();
  }
  NodeId i = g.add_input(make_desc(GgmlType::kI32, 64), "i");
  p.hadamard_n = 64;
  EXPECT_FALSE(g.add_op(OpKind::kHadamard, {i}, p).ok());
}

TEST(GraphShape, ShortConvShapes) {
  Graph g;
  NodeId u = g.add_input(make_desc(kF32, 64, 7), "u");
  NodeId w = g.add_weight(make_desc(kF32, 3, 64), "w");
  NodeId st = g.add_input(make_desc(kF32, 64, 2, 3), "state");
  NodeId seq = g.add_input(make_desc(GgmlType::kI32, 7), "seq");
  auto fresh = g.add_op(OpKind::kShortConv, {u, w});
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  EXPECT_EQ(g.node(*fresh).desc, make_desc(kF32, 64, 7));
  auto conv = g.add_op(OpKind::kShortConv, {u, w, st, seq});
  ASSERT_TRUE(conv.ok()) << conv.status().to_string();
  auto next = g.add_op(OpKind::kShortConvState, {u, st, seq});
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(g.node(*next).desc, make_desc(kF32, 64, 2, 3));
  NodeId st4 = g.add_input(make_desc(kF32, 64, 3, 3), "state4");       // L-1 = 3 != 2
  NodeId w_bad = g.add_weight(make_desc(kF32, 3, 32), "w_bad");        // E mismatch
  NodeId seq_bad = g.add_input(make_desc(GgmlType::kI32, 6), "seq6");  // T mismatch
  EXPECT_FALSE(g.add_op(OpKind::kShortConv, {u, w, st4, seq}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kShortConv, {u, w_bad}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kShortConv, {u, w, st}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kShortConvState, {u, st, seq_bad}).ok());
}

TEST(GraphShape, InputsMustBeF32OrI32) {
  Graph g;
  NodeId x = g.add_input(make_desc(GgmlType::kF16, 8), "x");
  EXPECT_FALSE(g.add_op(OpKind::kSilu, {x}).ok());
}

TEST(GraphShape, RmsNormWeightMustMatchRow) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 8, 2), "x");
  NodeId w_ok = g.add_weight(make_desc(kF32, 8), "w");
  NodeId w_f16 = g.add_weight(make_desc(GgmlType::kF16, 8), "w16");  // dequantized by reference
  NodeId w_bad = g.add_weight(make_desc(kF32, 4), "w4");
  EXPECT_TRUE(g.add_op(OpKind::kRmsNorm, {x}).ok());
  EXPECT_TRUE(g.add_op(OpKind::kRmsNorm, {x, w_ok}).ok());
  EXPECT_TRUE(g.add_op(OpKind::kRmsNorm, {x, w_f16}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kRmsNorm, {x, w_bad}).ok());
}

TEST(GraphShape, LayerNormWeightAndBiasMustMatchRow) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 8, 2, 3), "x");
  NodeId w = g.add_weight(make_desc(kF32, 8), "w");
  NodeId b16 = g.add_weight(make_desc(GgmlType::kF16, 8), "b16");  // dequantized by reference
  NodeId w_bad = g.add_weight(make_desc(kF32, 4), "w4");
  NodeId w_2d = g.add_weight(make_desc(kF32, 8, 2), "w2d");
  NodeId ids = g.add_input(make_desc(kI32, 8), "ids");
  for (const auto& ins : {std::vector<NodeId>{x}, {x, w}, {x, w, b16}, {x, b16, w}}) {
    auto y = g.add_op(OpKind::kLayerNorm, ins);
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    EXPECT_EQ(g.node(*y).desc, make_desc(kF32, 8, 2, 3));
  }
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {x, w_bad}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {x, w, w_bad}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {x, w, w_2d}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {x, w, b16, w}).ok());  // at most 3 inputs
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {ids}).ok());
  OpParams p;
  p.eps = -1.0f;
  EXPECT_FALSE(g.add_op(OpKind::kLayerNorm, {x, w}, p).ok());
  auto gelu = g.add_op(OpKind::kGeluErf, {x});
  ASSERT_TRUE(gelu.ok());
  EXPECT_EQ(g.node(*gelu).desc, make_desc(kF32, 8, 2, 3));
  EXPECT_FALSE(g.add_op(OpKind::kGeluErf, {x, x}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kGeluErf, {ids}).ok());
  EXPECT_EQ(op_name(OpKind::kLayerNorm), "LayerNorm");
  EXPECT_EQ(op_name(OpKind::kGeluErf), "GeluErf");
}

TEST(GraphShape, RopeChecks) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 8, 2, 3), "x");
  NodeId pos = g.add_input(make_desc(kI32, 3), "pos");
  NodeId pos_bad = g.add_input(make_desc(kI32, 2), "pos2");
  NodeId ff = g.add_weight(make_desc(kF32, 2), "ff");
  OpParams p;
  EXPECT_TRUE(g.add_op(OpKind::kRope, {x, pos}, p).ok());
  EXPECT_FALSE(g.add_op(OpKind::kRope, {x, pos_bad}, p).ok());
  EXPECT_FALSE(g.add_op(OpKind::kRope, {x, x}, p).ok());  // pos must be I32
  p.rope.n_dims = 3;
  EXPECT_FALSE(g.add_op(OpKind::kRope, {x, pos}, p).ok());
  p.rope.n_dims = 10;
  EXPECT_FALSE(g.add_op(OpKind::kRope, {x, pos}, p).ok());
  p.rope.n_dims = 4;
  EXPECT_TRUE(g.add_op(OpKind::kRope, {x, pos, ff}, p).ok());
  p.rope.n_dims = 8;
  EXPECT_FALSE(g.add_op(OpKind::kRope, {x, pos, ff}, p).ok());  // ff needs 4 entries
}

TEST(GraphShape, AttentionGqaAndOutputShape) {
  Graph g;
  NodeId q = g.add_input(make_desc(kF32, 16, 6, 3), "q");
  NodeId k = g.add_input(make_desc(kF32, 16, 2, 5), "k");
  NodeId v = g.add_input(make_desc(kF32, 8, 2, 5), "v");
  NodeId k4 = g.add_input(make_desc(kF32, 16, 4, 5), "k4");
  NodeId v4 = g.add_input(make_desc(kF32, 8, 4, 5), "v4");
  NodeId qp = g.add_input(make_desc(kI32, 3), "qp");
  NodeId kp = g.add_input(make_desc(kI32, 5), "kp");
  auto a = g.add_op(OpKind::kAttention, {q, k, v, qp, kp});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(g.node(*a).desc, make_desc(kF32, 8, 6, 3));
  auto bad = g.add_op(OpKind::kAttention, {q, k4, v4, qp, kp});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a multiple of n_kv_head"), std::string::npos);
  EXPECT_FALSE(g.add_op(OpKind::kAttention, {q, k, v, kp, kp}).ok());   // q_pos length
  EXPECT_FALSE(g.add_op(OpKind::kAttention, {q, k, k4, qp, kp}).ok());  // v heads differ
}

TEST(GraphShape, AttentionPagedInputs) {
  // k / v hold 9 state rows; the key list has 5 entries (k_pos, k_rows) for 3 queries.
  Graph g;
  NodeId q = g.add_input(make_desc(kF32, 16, 4, 3), "q");
  NodeId k = g.add_input(make_desc(kF32, 16, 2, 9), "k");
  NodeId v = g.add_input(make_desc(kF32, 8, 2, 9), "v");
  NodeId qp = g.add_input(make_desc(kI32, 3), "qp");
  NodeId kp = g.add_input(make_desc(kI32, 5), "kp");
  NodeId rows = g.add_input(make_desc(kI32, 5), "rows");
  NodeId seg = g.add_input(make_desc(kI32, 2, 3), "seg");
  NodeId rows4 = g.add_input(make_desc(kI32, 4), "rows4");
  NodeId frows = g.add_input(make_desc(kF32, 5), "frows");
  NodeId seg_t = g.add_input(make_desc(kI32, 3, 2), "seg_t");
  NodeId seg_flat = g.add_input(make_desc(kI32, 6), "seg_flat");
  NodeId fseg = g.add_input(make_desc(kF32, 2, 3), "fseg");
  auto a6 = g.add_op(OpKind::kAttention, {q, k, v, qp, kp, rows});
  ASSERT_TRUE(a6.ok()) << a6.status().to_string();
  EXPECT_EQ(g.node(*a6).desc, make_desc(kF32, 8, 4, 3));
  auto a7 = g.add_op(OpKind::kAttention, {q, k, v, qp, kp, rows, seg});
  ASSERT_TRUE(a7.ok()) << a7.status().to_string();
  EXPECT_EQ(g.node(*a7).desc, make_desc(kF32, 8, 4, 3));
  auto expect_bad = [&](const std::vector<NodeId>& in, const std::string& needle) {
    auto r = g.add_op(OpKind::kAttention, in);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
  };
  // Without k_rows the list is the rows of k: 5 positions for 9 rows is an error.
  expect_bad({q, k, v, qp, kp}, "k_pos must be [n_kv]");
  expect_bad({q, k, v, qp}, "expects 5..7 inputs, got 4");
  expect_bad({q, k, v, qp, kp, rows, seg, seg}, "expects 5..7 inputs, got 8");
  expect_bad({q, k, v, qp, kp, rows4}, "k_rows must be [n_kv]");
  expect_bad({q, k, v, qp, kp, frows}, "k_rows must be I32");
  expect_bad({q, k, v, qp, kp, rows, seg_t}, "q_seg must be [2, n_q]");
  expect_bad({q, k, v, qp, kp, rows, seg_flat}, "q_seg must be [2, n_q]");
  expect_bad({q, k, v, qp, kp, rows, fseg}, "q_seg must be I32");
}

TEST(GraphShape, QuantizedKvStates) {
  Graph g;
  NodeId q = g.add_input(make_desc(kF32, 64, 4, 3), "q");
  NodeId src = g.add_input(make_desc(kF32, 64, 2, 3), "src");
  NodeId slots = g.add_input(make_desc(kI32, 3), "slots");
  NodeId qp = g.add_input(make_desc(kI32, 3), "qp");
  NodeId kp = g.add_input(make_desc(kI32, 10), "kp");
  NodeId k8 = g.add_state(make_desc(GgmlType::kQ8_0, 64, 2, 10), "k8");
  NodeId v4 = g.add_state(make_desc(GgmlType::kQ4_0, 64, 2, 10), "v4");
  NodeId v16 = g.add_state(make_desc(GgmlType::kF16, 64, 2, 10), "v16");
  NodeId odd = g.add_state(make_desc(GgmlType::kQ8_0, 48, 2, 10), "odd");
  NodeId q41 = g.add_state(make_desc(GgmlType::kQ4_1, 64, 2, 10), "q41");
  auto kw = g.add_op(OpKind::kCacheWrite, {k8, src, slots});
  ASSERT_TRUE(kw.ok()) << kw.status().to_string();
  EXPECT_EQ(g.node(*kw).desc, make_desc(GgmlType::kQ8_0, 64, 2, 10));
  auto vw = g.add_op(OpKind::kCacheWrite, {v4, src, slots});
  ASSERT_TRUE(vw.ok()) << vw.status().to_string();
  // Q8_0 K with Q4_0 V is fine; a quantized cache next to an F16 one is not.
  auto a = g.add_op(OpKind::kAttention, {q, *kw, *vw, qp, kp});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(g.node(*a).desc, make_desc(kF32, 64, 4, 3));
  auto mixed = g.add_op(OpKind::kAttention, {q, *kw, v16, qp, kp});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("both"), std::string::npos);
  // head_dim must be whole 32-element blocks.
  NodeId src48 = g.add_input(make_desc(kF32, 48, 2, 3), "src48");
  auto cw_odd = g.add_op(OpKind::kCacheWrite, {odd, src48, slots});
  ASSERT_FALSE(cw_odd.ok());
  EXPECT_NE(cw_odd.status().message().find("not a multiple of 32"), std::string::npos)
      << cw_odd.status().to_string();
  NodeId q48 = g.add_input(make_desc(kF32, 48, 4, 3), "q48");
  auto a_odd = g.add_op(OpKind::kAttention, {q48, odd, odd, qp, kp});
  ASSERT_FALSE(a_odd.ok());
  EXPECT_NE(a_odd.status().message().find("not a multiple of 32"), std::string::npos);
  // Other block types are not cache types.
  EXPECT_FALSE(g.add_op(OpKind::kCacheWrite, {q41, src, slots}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kAttention, {q, q41, q41, qp, kp}).ok());
}

TEST(GraphShape, BinaryBroadcastRules) {
  Graph g;
  NodeId a = g.add_input(make_desc(kF32, 8, 4), "a");
  NodeId row = g.add_input(make_desc(kF32, 8), "row");
  NodeId col = g.add_input(make_desc(kF32, 1, 4), "col");
  NodeId bad = g.add_input(make_desc(kF32, 2, 4), "bad");
  EXPECT_TRUE(g.add_op(OpKind::kAdd, {a, row}).ok());
  EXPECT_TRUE(g.add_op(OpKind::kMul, {a, col}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kMul, {a, bad}).ok());
}

TEST(GraphShape, EmbeddingReshapeGlu) {
  Graph g;
  NodeId table = g.add_weight(make_desc(GgmlType::kQ8_0, 64, 100), "tok");
  NodeId ids = g.add_input(make_desc(kI32, 7), "ids");
  NodeId fids = g.add_input(make_desc(kF32, 7), "fids");
  auto e = g.add_op(OpKind::kEmbedding, {table, ids});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(g.node(*e).desc, make_desc(kF32, 64, 7));
  EXPECT_FALSE(g.add_op(OpKind::kEmbedding, {table, fids}).ok());
  OpParams r;
  r.ne = {16, 4, 7, 1};
  auto re = g.add_op(OpKind::kReshape, {*e}, r);
  ASSERT_TRUE(re.ok());
  EXPECT_EQ(g.node(*re).desc, make_desc(kF32, 16, 4, 7));
  r.ne = {16, 4, 6, 1};
  EXPECT_FALSE(g.add_op(OpKind::kReshape, {*e}, r).ok());
  EXPECT_TRUE(g.add_op(OpKind::kGlu, {*e, *e}).ok());
  EXPECT_FALSE(g.add_op(OpKind::kGlu, {*e, *re}).ok());
}

TEST(GraphStages, NodesTakeTheCurrentStageAndCopiesKeepThem) {
  Graph g;
  EXPECT_EQ(g.n_stages(), 1);
  const NodeId a = g.add_input(make_desc(kF32, 4), "a");
  g.begin_stage(2, "layer 1");
  auto b = g.add_op(OpKind::kSilu, {a});
  ASSERT_TRUE(b.ok());
  g.set_batch_tokens(7);
  EXPECT_EQ(g.node(a).stage, 0);
  EXPECT_EQ(g.node(*b).stage, 2);
  EXPECT_EQ(g.n_stages(), 3);
  EXPECT_EQ(g.stage_label(2), "layer 1");
  EXPECT_EQ(g.stage_label(1), "");
  EXPECT_EQ(g.stage_label(9), "");
  const Graph copy = g;
  EXPECT_EQ(copy.node(*b).stage, 2);
  EXPECT_EQ(copy.n_stages(), 3);
  EXPECT_EQ(copy.batch_tokens(), 7);
  EXPECT_EQ(copy.stage_label(2), "layer 1");
}

}  // namespace
}  // namespace geniex::graph
