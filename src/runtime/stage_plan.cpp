#include "runtime/stage_plan.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace geniex::runtime {

using graph::Bindings;
using graph::BindingsAccess;
using graph::Graph;
using graph::NodeId;
using graph::NodeRole;

namespace {

// Segment index of every stage: consecutive stages with ops and the same unit share one.
// Stages without ops take no segment (-1).
Result<std::vector<int32_t>> segment_of_stages(const Graph& g,
                                               const std::vector<backends::Backend*>& unit_of,
                                               std::vector<Segment>& segs) {
  std::vector<bool> has_ops(static_cast<size_t>(g.n_stages()), false);
  for (const auto& n : g.nodes()) {
    if (n.role == NodeRole::kOp) has_ops[static_cast<size_t>(n.stage)] = true;
  }
  std::vector<int32_t> seg_of(has_ops.size(), -1);
  for (int32_t s = 0; s < g.n_stages(); ++s) {
    if (!has_ops[static_cast<size_t>(s)]) continue;
    backends::Backend* u =
        static_cast<size_t>(s) < unit_of.size() ? unit_of[static_cast<size_t>(s)] : nullptr;
    if (u == nullptr) {
      return invalid_argument("stage plan: stage " + std::to_string(s) + " (" + g.stage_label(s) +
                              ") has ops but no unit");
    }
    if (segs.empty() || segs.back().unit != u) {
      Segment seg;
      seg.first_stage = s;
      seg.unit = u;
      segs.push_back(std::move(seg));
    }
    segs.back().last_stage = s;
    seg_of[static_cast<size_t>(s)] = static_cast<int32_t>(segs.size() - 1);
  }
  return seg_of;
}

NodeId add_leaf_copy(Graph& sub, const graph::Node& n) {
  switch (n.role) {
    case NodeRole::kWeight: return sub.add_weight(n.desc, n.name);
    case NodeRole::kState: return sub.add_state(n.desc, n.name);
    default: return sub.add_input(n.desc, n.name);
  }
}

// Kahn's order of the segments by their deps; kInvalidArgument on a cycle (stages whose node
// order interleaves both ways cannot be cut there).
Status sort_segments(std::vector<Segment>& segs) {
  const size_t n = segs.size();
  std::vector<int32_t> order;
  std::vector<bool> done(n, false);
  while (order.size() < n) {
    bool progressed = false;
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      const bool ready = std::all_of(segs[i].deps.begin(), segs[i].deps.end(),
                                     [&](int32_t d) { return done[static_cast<size_t>(d)]; });
      if (ready) {
        done[i] = true;
        order.push_back(static_cast<int32_t>(i));
        progressed = true;
      }
    }
    if (!progressed) {
      return invalid_argument("stage plan: the stages' data flow has a cycle between units");
    }
  }
  std::vector<int32_t> new_index(n);
  for (size_t k = 0; k < n; ++k) new_index[static_cast<size_t>(order[k])] = static_cast<int32_t>(k);
  std::vector<Segment> sorted;
  sorted.reserve(n);
  for (int32_t i : order) sorted.push_back(std::move(segs[static_cast<size_t>(i)]));
  for (auto& s : sorted) {
    for (auto& d : s.deps) d = new_index[static_cast<size_t>(d)];
  }
  segs = std::move(sorted);
  return {};
}

}  // namespace

Result<StagePlan> StagePlan::build(const Graph& g,
                                   const std::vector<backends::Backend*>& unit_of_stage) {
  StagePlan plan;
  auto& segs = plan.segments_;
  GENIEX_ASSIGN_OR_RETURN(std::vector<int32_t> seg_of, segment_of_stages(g, unit_of_stage, segs));
  for (auto& s : segs) s.sub.set_batch_tokens(g.batch_tokens());

  // Per segment: parent node -> sub node.
  std::vector<std::unordered_map<NodeId, NodeId>> map(segs.size());
  std::unordered_map<NodeId, int32_t> boundary_of;  // parent op -> boundary index
  for (NodeId p = 0; p < g.size(); ++p) {
    const graph::Node& n = g.node(p);
    if (n.role != NodeRole::kOp) continue;
    const int32_t k = seg_of[static_cast<size_t>(n.stage)];
    Segment& seg = segs[static_cast<size_t>(k)];
    auto& m = map[static_cast<size_t>(k)];
    std::vector<NodeId> ins;
    for (NodeId q : n.inputs) {
      if (auto it = m.find(q); it != m.end()) {
        ins.push_back(it->second);
        continue;
      }
      const graph::Node& qn = g.node(q);
      NodeId sid = 0;
      if (qn.role != NodeRole::kOp) {
        sid = add_leaf_copy(seg.sub, qn);
      } else {
        // Produced by another segment: a boundary value.
        if (qn.desc.dtype != GgmlType::kF32) {
          return invalid_argument("stage plan: " + std::string(graph::op_name(qn.op)) + " (" +
                                  qn.name + ") is read across a stage boundary but is not F32");
        }
        const int32_t j = seg_of[static_cast<size_t>(qn.stage)];
        auto [bit, fresh] =
            boundary_of.emplace(q, static_cast<int32_t>(plan.boundary_node_.size()));
        if (fresh) {
          plan.boundary_node_.push_back(q);
          plan.boundary_.emplace_back();
          segs[static_cast<size_t>(j)].exports.emplace_back(map[static_cast<size_t>(j)].at(q),
                                                            bit->second);
        }
        sid = seg.sub.add_input(qn.desc, "import:" + qn.name);
        seg.imports.emplace_back(sid, bit->second);
        if (std::find(seg.deps.begin(), seg.deps.end(), j) == seg.deps.end()) {
          seg.deps.push_back(j);
        }
      }
      if (seg.parent_of.size() <= sid) seg.parent_of.resize(sid + 1);
      seg.parent_of[sid] = q;
      m.emplace(q, sid);
      ins.push_back(sid);
    }
    seg.sub.begin_stage(n.stage, g.stage_label(n.stage), g.stage_kind(n.stage),
                        g.stage_layer(n.stage));
    GENIEX_ASSIGN_OR_RETURN(NodeId sid, seg.sub.add_op(n.op, ins, n.params, n.name));
    if (seg.parent_of.size() <= sid) seg.parent_of.resize(sid + 1);
    seg.parent_of[sid] = p;
    m.emplace(p, sid);
  }
  for (size_t b = 0; b < plan.boundary_.size(); ++b) {
    plan.boundary_[b].resize(static_cast<size_t>(g.node(plan.boundary_node_[b]).desc.nelements()));
  }
  GENIEX_TRY(sort_segments(segs));
  return plan;
}

int64_t StagePlan::boundary_bytes() const {
  int64_t n = 0;
  for (const auto& b : boundary_) n += static_cast<int64_t>(b.size() * sizeof(float));
  return n;
}

std::pair<int64_t, int64_t> StagePlan::copy_bytes(size_t i) const {
  int64_t in = 0, out = 0;
  for (const auto& [sid, b] : segments_[i].imports) {
    in += static_cast<int64_t>(boundary_[static_cast<size_t>(b)].size() * sizeof(float));
  }
  for (const auto& [sid, b] : segments_[i].exports) {
    out += static_cast<int64_t>(boundary_[static_cast<size_t>(b)].size() * sizeof(float));
  }
  return {in, out};
}

std::function<Status()> StagePlan::forward_hook(const Bindings& parent, NodeId p,
                                                bool* hook_failed) {
  return [&parent, p, hook_failed] {
    Status s = BindingsAccess(parent).run_hook(p);
    if (!s.ok() && hook_failed != nullptr) *hook_failed = true;
    return s;
  };
}

Bindings StagePlan::bindings_for(size_t i, const Bindings& parent, bool* hook_failed) {
  const Segment& seg = segments_[i];
  const BindingsAccess acc(parent);
  Bindings b;
  // A boundary value the caller also asked for lives in the caller's buffer.
  auto boundary_span = [&](int32_t bi) -> std::span<float> {
    const NodeId p = boundary_node_[static_cast<size_t>(bi)];
    auto& buf = boundary_[static_cast<size_t>(bi)];
    if (auto it = acc.outputs().find(p);
        it != acc.outputs().end() && it->second.size() >= buf.size()) {
      return it->second.first(buf.size());
    }
    return buf;
  };
  std::vector<bool> is_import(seg.sub.size(), false);
  for (const auto& [sid, bi] : seg.imports) {
    is_import[sid] = true;
    const std::span<float> s = boundary_span(bi);
    b.bind_input(sid, std::span<const float>(s.data(), s.size()));
  }
  for (NodeId sid = 0; sid < seg.sub.size(); ++sid) {
    if (is_import[sid]) continue;
    const NodeId p = seg.parent_of[sid];
    const graph::Node& n = seg.sub.node(sid);
    switch (n.role) {
      case NodeRole::kInput:
        if (auto it = acc.f32_inputs().find(p); it != acc.f32_inputs().end()) {
          b.bind_input(sid, it->second);
        } else if (auto jt = acc.i32_inputs().find(p); jt != acc.i32_inputs().end()) {
          b.bind_input(sid, jt->second);
        }
        break;
      case NodeRole::kWeight:
        if (auto it = acc.weights().find(p); it != acc.weights().end()) {
          b.bind_weight(sid, it->second.type, it->second.bytes);
        }
        break;
      case NodeRole::kState:
        if (auto it = acc.states().find(p); it != acc.states().end()) {
          b.bind_state(sid, it->second.type, it->second.bytes);
        }
        break;
      case NodeRole::kOp:
        if (auto it = acc.outputs().find(p); it != acc.outputs().end()) {
          b.bind_output(sid, it->second);
        }
        if (acc.has_hook(p)) {
          b.add_hook(sid, forward_hook(parent, p, hook_failed));
        }
        break;
    }
  }
  for (const auto& [sid, bi] : seg.exports) b.bind_output(sid, boundary_span(bi));
  return b;
}

}  // namespace geniex::runtime
