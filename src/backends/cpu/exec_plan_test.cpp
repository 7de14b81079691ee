// plan_graph: liveness-planned arena offsets. Every test recomputes liveness independently and
// checks that no two simultaneously live buffers overlap, that aliases share their root's offset
// and that buffers are actually reused.
#include "backends/cpu/exec_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace geniex::backends::cpu {
namespace {

using graph::Graph;
using graph::make_desc;
using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;
using graph::OpParams;

constexpr GgmlType kF32 = GgmlType::kF32;
constexpr GgmlType kF16 = GgmlType::kF16;
constexpr GgmlType kI32 = GgmlType::kI32;

NodeId op(Graph& g, OpKind kind, const std::vector<NodeId>& in, const OpParams& p = {}) {
  auto r = g.add_op(kind, in, p);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : 0;
}

NodeId reshape(Graph& g, NodeId x, std::array<int64_t, 4> ne) {
  OpParams p;
  p.ne = ne;
  return op(g, OpKind::kReshape, {x}, p);
}

// Independent model of the plan's contract: the root each node aliases, and the last step at
// which each root's buffer must still hold its value (n = to the end of the run).
struct Liveness {
  std::vector<NodeId> root;
  std::vector<size_t> last;
};

Liveness liveness(const Graph& g, const std::vector<bool>& keep) {
  const size_t n = g.size();
  Liveness l;
  l.root.resize(n);
  l.last.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<NodeId>(i));
    l.root[i] = static_cast<NodeId>(i);
    if (node.role == NodeRole::kOp && node.op == OpKind::kReshape) {
      l.root[i] = l.root[node.inputs[0]];
    }
    l.last[i] = i;
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<NodeId>(i));
    for (NodeId in : node.inputs) l.last[l.root[in]] = std::max(l.last[l.root[in]], i);
    if (i < keep.size() && keep[i]) l.last[l.root[i]] = n;
  }
  return l;
}

// Checks the plan against the contract; returns the sum of all buffer sizes (in floats).
int64_t check_plan(const Graph& g, const std::vector<bool>& keep, const ExecPlan& plan) {
  const size_t n = g.size();
  EXPECT_EQ(plan.root.size(), n);
  EXPECT_EQ(plan.offset.size(), n);
  if (plan.root.size() != n || plan.offset.size() != n) return 0;
  const Liveness l = liveness(g, keep);
  int64_t total = 0;
  std::vector<NodeId> owners;
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<NodeId>(i));
    EXPECT_EQ(plan.root[i], l.root[i]) << "node " << i;
    const bool is_op = node.role == NodeRole::kOp;
    if (!is_op) {
      EXPECT_EQ(plan.offset[i], ExecPlan::kNoBuffer) << "leaf node " << i << " got a buffer";
      continue;
    }
    if (node.op == OpKind::kCacheWrite) {
      EXPECT_EQ(plan.offset[i], ExecPlan::kNoBuffer) << "CacheWrite node " << i << " got a buffer";
      continue;
    }
    if (plan.root[i] != i) {
      EXPECT_EQ(plan.offset[i], plan.offset[plan.root[i]]) << "alias node " << i;
      continue;
    }
    EXPECT_NE(plan.offset[i], ExecPlan::kNoBuffer) << "op node " << i << " has no buffer";
    EXPECT_GE(plan.offset[i], 0);
    EXPECT_LE(plan.offset[i] + node.desc.nelements(), plan.arena_floats) << "node " << i;
    total += node.desc.nelements();
    owners.push_back(static_cast<NodeId>(i));
  }
  // Buffers live during [i, last[i]] (inclusive: an op's output must not overlap its inputs).
  for (size_t a = 0; a < owners.size(); ++a) {
    for (size_t b = a + 1; b < owners.size(); ++b) {
      const NodeId x = owners[a], y = owners[b];  // x < y
      const bool live_together = y <= l.last[x];
      if (!live_together) continue;
      const int64_t x0 = plan.offset[x], x1 = x0 + g.node(x).desc.nelements();
      const int64_t y0 = plan.offset[y], y1 = y0 + g.node(y).desc.nelements();
      EXPECT_TRUE(x1 <= y0 || y1 <= x0)
          << "nodes " << x << " [" << x0 << ", " << x1 << ") and " << y << " [" << y0 << ", " << y1
          << ") are live together but overlap";
    }
  }
  return total;
}

TEST(ExecPlan, LongChainReusesBuffers) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 1000), "x");
  NodeId cur = x;
  for (int i = 0; i < 20; ++i) {
    OpParams p;
    p.scale = 1.5f;
    cur = op(g, i % 2 ? OpKind::kSilu : OpKind::kScale, {cur}, p);
  }
  std::vector<bool> keep(g.size(), false);
  keep[cur] = true;
  const ExecPlan plan = plan_graph(g, keep);
  const int64_t total = check_plan(g, keep, plan);
  EXPECT_EQ(total, 20 * 1000);
  EXPECT_LT(plan.arena_floats, total);
  // Two live buffers at a time (input and output of one op) suffice, plus alignment padding.
  EXPECT_LE(plan.arena_floats, 2 * 1024);
}

TEST(ExecPlan, DiamondsKeepBothBranchesLive) {
  // x -> a -> {b, c} -> add(b, c) -> d -> {e, f} -> mul(e, f) ...
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 64, 3), "x");
  NodeId cur = x;
  for (int i = 0; i < 4; ++i) {
    NodeId a = op(g, OpKind::kSilu, {cur});
    NodeId b = op(g, OpKind::kGelu, {a});
    NodeId c = op(g, OpKind::kSilu, {a});
    NodeId wide = op(g, OpKind::kScale, {c});
    cur = op(g, i % 2 ? OpKind::kAdd : OpKind::kMul, {b, wide});
  }
  std::vector<bool> keep(g.size(), false);
  keep[cur] = true;
  const ExecPlan plan = plan_graph(g, keep);
  const int64_t total = check_plan(g, keep, plan);
  EXPECT_LT(plan.arena_floats, total);
}

TEST(ExecPlan, ReshapeAliasesItsInputAndExtendsItsLife) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 32, 4), "x");
  NodeId a = op(g, OpKind::kSilu, {x});
  NodeId r1 = reshape(g, a, {16, 8, 1, 1});
  NodeId r2 = reshape(g, r1, {128, 1, 1, 1});  // reshape of a reshape: same root
  NodeId b = op(g, OpKind::kGelu, {x});
  NodeId c = op(g, OpKind::kSilu, {b});
  NodeId d = op(g, OpKind::kScale, {c});
  NodeId d2 = reshape(g, d, {128, 1, 1, 1});
  NodeId e = op(g, OpKind::kAdd, {r2, d2});   // reads `a` through two reshapes
  NodeId rx = reshape(g, x, {128, 1, 1, 1});  // reshape of an input: no buffer
  NodeId f = op(g, OpKind::kMul, {e, rx});
  std::vector<bool> keep(g.size(), false);
  keep[f] = true;
  const ExecPlan plan = plan_graph(g, keep);
  check_plan(g, keep, plan);
  EXPECT_EQ(plan.root[r1], a);
  EXPECT_EQ(plan.root[r2], a);
  EXPECT_EQ(plan.root[d2], d);
  EXPECT_EQ(plan.offset[r2], plan.offset[a]);
  EXPECT_EQ(plan.root[rx], x);
  EXPECT_EQ(plan.offset[rx], ExecPlan::kNoBuffer);
  // `a` is read (via r2) by e, so b, c and d must not have taken its place.
  for (NodeId other : {b, c, d}) {
    const int64_t a0 = plan.offset[a], a1 = a0 + 128;
    const int64_t o0 = plan.offset[other], o1 = o0 + 128;
    EXPECT_TRUE(a1 <= o0 || o1 <= a0) << "node " << other << " overlaps the aliased buffer";
  }
}

// `alias` (matmul epilogues): the aliased node shares its root's buffer, and the root stays live
// until the alias's last reader.
TEST(ExecPlan, ExplicitAliasSharesTheBufferAndExtendsItsLife) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 32, 4), "x");
  NodeId a = op(g, OpKind::kSilu, {x});
  NodeId b = op(g, OpKind::kGelu, {a});  // computed in a's buffer
  NodeId c = op(g, OpKind::kSilu, {x});
  NodeId d = op(g, OpKind::kScale, {c});
  NodeId e = op(g, OpKind::kAdd, {b, d});
  std::vector<bool> keep(g.size(), false);
  keep[e] = true;
  std::vector<NodeId> alias(g.size());
  for (NodeId i = 0; i < g.size(); ++i) alias[i] = i;
  alias[b] = a;
  const ExecPlan plan = plan_graph(g, keep, alias);
  EXPECT_EQ(plan.root[b], a);
  EXPECT_EQ(plan.offset[b], plan.offset[a]);
  for (NodeId other : {c, d, e}) {  // a's buffer holds b until e has read it
    const int64_t a0 = plan.offset[a], a1 = a0 + 128;
    const int64_t o0 = plan.offset[other], o1 = o0 + 128;
    EXPECT_TRUE(a1 <= o0 || o1 <= a0) << "node " << other << " overlaps the aliased buffer";
  }
}

TEST(ExecPlan, KeptNodesLiveToTheEnd) {
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, 256), "x");
  NodeId early = op(g, OpKind::kSilu, {x});
  NodeId early_view = reshape(g, early, {16, 16, 1, 1});  // kept through its alias
  NodeId kept = op(g, OpKind::kGelu, {early});
  NodeId cur = kept;
  for (int i = 0; i < 10; ++i) cur = op(g, OpKind::kSilu, {cur});
  std::vector<bool> keep(g.size(), false);
  keep[early_view] = true;
  keep[kept] = true;
  keep[cur] = true;
  const ExecPlan plan = plan_graph(g, keep);
  check_plan(g, keep, plan);
  // Nothing computed after them may overlap the kept buffers.
  for (NodeId k : {early, kept}) {
    const int64_t k0 = plan.offset[k], k1 = k0 + 256;
    for (NodeId id = k + 1; id < g.size(); ++id) {
      if (g.node(id).role != NodeRole::kOp || plan.root[id] != id) continue;
      const int64_t o0 = plan.offset[id], o1 = o0 + 256;
      EXPECT_TRUE(k1 <= o0 || o1 <= k0) << "node " << id << " overwrites kept node " << k;
    }
  }
  // A shorter keep vector than the graph is allowed (missing entries are false).
  const std::vector<bool> short_keep = {false, true};
  check_plan(g, short_keep, plan_graph(g, short_keep));
}

TEST(ExecPlan, CacheWriteGetsNoBufferAndMixedSizes) {
  // A decoder-layer-shaped graph: projections, a KV cache write into a state, attention over it.
  const int64_t d = 8, nh = 4, nkv = 2, t = 3, s = 16, emb = 32;
  Graph g;
  NodeId x = g.add_input(make_desc(kF32, emb, t), "x");
  NodeId pos = g.add_input(make_desc(kI32, t), "pos");
  NodeId kpos = g.add_input(make_desc(kI32, s), "kpos");
  NodeId wq = g.add_weight(make_desc(kF32, emb, d * nh), "wq");
  NodeId wk = g.add_weight(make_desc(kF32, emb, d * nkv), "wk");
  NodeId kstate = g.add_state(make_desc(kF16, d, nkv, s), "k_cache");
  NodeId vstate = g.add_state(make_desc(kF32, d, nkv, s), "v_cache");
  NodeId q = op(g, OpKind::kMatMul, {wq, x});
  NodeId k = op(g, OpKind::kMatMul, {wk, x});
  NodeId q3 = reshape(g, q, {d, nh, t, 1});
  NodeId k3 = reshape(g, k, {d, nkv, t, 1});
  NodeId kw = op(g, OpKind::kCacheWrite, {kstate, k3, pos});
  NodeId vw = op(g, OpKind::kCacheWrite, {vstate, k3, pos});
  OpParams ap;
  ap.attn.scale = 0.35f;
  NodeId a = op(g, OpKind::kAttention, {q3, kw, vw, pos, kpos}, ap);
  NodeId af = reshape(g, a, {d * nh, t, 1, 1});
  NodeId y = op(g, OpKind::kAdd, {af, x});
  std::vector<bool> keep(g.size(), false);
  keep[y] = true;
  const ExecPlan plan = plan_graph(g, keep);
  check_plan(g, keep, plan);
  EXPECT_EQ(plan.offset[kw], ExecPlan::kNoBuffer);
  EXPECT_EQ(plan.offset[vw], ExecPlan::kNoBuffer);
  EXPECT_EQ(plan.offset[kstate], ExecPlan::kNoBuffer);
  EXPECT_EQ(plan.offset[af], plan.offset[a]);
}

TEST(ExecPlan, EmptyAndLeafOnlyGraphs) {
  Graph empty;
  const ExecPlan p0 = plan_graph(empty, {});
  EXPECT_EQ(p0.arena_floats, 0);
  EXPECT_TRUE(p0.offset.empty());

  Graph leaves;
  leaves.add_input(make_desc(kF32, 10), "x");
  leaves.add_weight(make_desc(kF32, 10), "w");
  const ExecPlan p1 = plan_graph(leaves, {true, true});
  EXPECT_EQ(p1.arena_floats, 0);
  EXPECT_EQ(p1.offset[0], ExecPlan::kNoBuffer);
  EXPECT_EQ(p1.offset[1], ExecPlan::kNoBuffer);
}

}  // namespace
}  // namespace geniex::backends::cpu
