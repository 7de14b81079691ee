#include "backends/cpu/matmul_fusion.h"

#include "backends/cpu/cpu_ops.h"

namespace geniex::backends::cpu {

using graph::Node;
using graph::NodeId;
using graph::NodeRole;
using graph::OpKind;

void apply_epilogue(const MatmulEpilogue& e, float* y, int64_t n, int64_t r0, int64_t nr,
                    int64_t c0, int64_t nc) {
  for (int64_t c = c0; c < c0 + nc; ++c) {
    float* row = y + c * n + r0;
    // Each step is its own op's arithmetic: out = a + b with a the matmul's value (bias add),
    // act(x), then out = r + x (IEEE addition is commutative, so the operand order of the graph's
    // add does not matter).
    if (e.bias != nullptr) {
      const float* b = e.bias + r0;
      for (int64_t i = 0; i < nr; ++i) row[i] = row[i] + b[i];
    }
    if (e.act == MatmulEpilogue::Act::kGelu) {
      gelu_rows(row, nullptr, row, nr);
    } else if (e.act == MatmulEpilogue::Act::kGeluErf) {
      gelu_erf_rows(row, row, nr);
    }
    if (e.resid != nullptr) {
      const float* r = e.resid + c * n + r0;
      for (int64_t i = 0; i < nr; ++i) row[i] = r[i] + row[i];
    }
  }
}

MatmulFusions find_matmul_fusions(const graph::Graph& g, const std::vector<bool>& keep) {
  const auto n = static_cast<NodeId>(g.size());
  MatmulFusions f;
  f.chain.assign(n, MatmulChain{});
  f.into.resize(n);
  std::vector<uint32_t> readers(n, 0);
  std::vector<NodeId> reader(n, MatmulChain::kNone);  // the last reader seen
  for (NodeId id = 0; id < n; ++id) {
    f.into[id] = id;
    const Node& node = g.node(id);
    if (node.role != NodeRole::kOp) continue;
    for (NodeId in : node.inputs) {
      ++readers[in];
      reader[in] = id;
    }
  }
  auto kept = [&](NodeId id) { return id < keep.size() && keep[id]; };
  // The single reader of `id` when `id` may be folded into what reads it.
  auto next = [&](NodeId id) -> const Node* {
    if (readers[id] != 1 || kept(id)) return nullptr;
    const Node& r = g.node(reader[id]);
    return r.role == NodeRole::kOp ? &r : nullptr;
  };
  for (NodeId m = 0; m < n; ++m) {
    const Node& mm = g.node(m);
    if (mm.role != NodeRole::kOp || mm.op != OpKind::kMatMul) continue;
    MatmulChain c;
    NodeId cur = m;
    const graph::TensorDesc& d = mm.desc;
    // Bias: add(y, b) with b a weight of ne0 elements.
    if (const Node* r = next(cur);
        r != nullptr && r->op == OpKind::kAdd && r->inputs[0] == cur && r->inputs[1] != cur) {
      const Node& b = g.node(r->inputs[1]);
      if (b.role == NodeRole::kWeight && b.desc.ne[0] == d.ne[0] && b.desc.nelements() == d.ne[0] &&
          r->desc.ne == d.ne) {
        c.bias = r->inputs[1];
        cur = reader[cur];
      }
    }
    // Activation.
    if (const Node* r = next(cur);
        r != nullptr && (r->op == OpKind::kGelu || r->op == OpKind::kGeluErf)) {
      c.act = r->op == OpKind::kGelu ? MatmulEpilogue::Act::kGelu : MatmulEpilogue::Act::kGeluErf;
      cur = reader[cur];
    }
    // Residual: add(r, y) or add(y, r), r of y's shape, computed before the matmul.
    if (const Node* r = next(cur);
        r != nullptr && r->op == OpKind::kAdd && (r->inputs[0] == cur) != (r->inputs[1] == cur)) {
      const NodeId o = r->inputs[0] == cur ? r->inputs[1] : r->inputs[0];
      const Node& on = g.node(o);
      const bool f32_value = (on.role == NodeRole::kOp && on.op != OpKind::kCacheWrite) ||
                             (on.role == NodeRole::kInput && on.desc.dtype == GgmlType::kF32);
      if (o < m && f32_value && on.desc.ne == d.ne && r->desc.ne == d.ne) {
        c.resid = o;
        cur = reader[cur];
      }
    }
    if (cur == m) continue;
    c.last = cur;
    f.chain[m] = c;
    // The folded nodes: from m through the single readers up to `last`.
    for (NodeId x = m; x != cur;) {
      x = reader[x];
      f.into[x] = m;
    }
  }
  return f;
}

}  // namespace geniex::backends::cpu
