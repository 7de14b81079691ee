#include "backends/cpu/exec_plan.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace geniex::backends::cpu {
namespace {

// 64-byte alignment of every buffer (in floats).
constexpr int64_t kAlign = 16;

int64_t round_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// First-fit allocator over [0, inf) with coalescing of free ranges.
class RangeAllocator {
 public:
  int64_t alloc(int64_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= size) {
        const int64_t off = it->first;
        const int64_t rest = it->second - size;
        free_.erase(it);
        if (rest > 0) free_[off + size] = rest;
        return off;
      }
    }
    // Grow: reuse a free range that touches the end.
    int64_t off = end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        off = last->first;
        free_.erase(last);
      }
    }
    end_ = off + size;
    peak_ = std::max(peak_, end_);
    return off;
  }

  void release(int64_t off, int64_t size) {
    auto [it, inserted] = free_.emplace(off, size);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }

  [[nodiscard]] int64_t peak() const { return peak_; }

 private:
  std::map<int64_t, int64_t> free_;
  int64_t end_ = 0;
  int64_t peak_ = 0;
};

}  // namespace

ExecPlan plan_graph(const graph::Graph& g, const std::vector<bool>& keep,
                    const std::vector<graph::NodeId>& alias) {
  using graph::NodeRole;
  using graph::OpKind;
  const size_t n = g.size();
  ExecPlan plan;
  plan.root.resize(n);
  plan.offset.assign(n, ExecPlan::kNoBuffer);
  std::vector<size_t> last_use(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<graph::NodeId>(i));
    plan.root[i] = static_cast<graph::NodeId>(i);
    if (node.role == NodeRole::kOp && node.op == OpKind::kReshape) {
      plan.root[i] = plan.root[node.inputs[0]];
    } else if (i < alias.size() && alias[i] != i) {
      plan.root[i] = plan.root[alias[i]];
    }
    last_use[i] = i;
    if (node.role == NodeRole::kOp) {
      for (graph::NodeId in : node.inputs) {
        last_use[plan.root[in]] = std::max(last_use[plan.root[in]], i);
      }
    }
    if (i < keep.size() && keep[i]) last_use[plan.root[i]] = n;
  }
  // Buffers to release after node i.
  std::vector<std::vector<graph::NodeId>> release_after(n + 1);
  RangeAllocator ranges;
  std::vector<int64_t> size(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.node(static_cast<graph::NodeId>(i));
    const bool owns =
        node.role == NodeRole::kOp && plan.root[i] == i && node.op != OpKind::kCacheWrite;
    if (owns) {
      size[i] = round_up(node.desc.nelements());
      plan.offset[i] = ranges.alloc(size[i]);
      release_after[std::min(last_use[i], n)].push_back(static_cast<graph::NodeId>(i));
    }
    for (graph::NodeId r : release_after[i]) ranges.release(plan.offset[r], size[r]);
  }
  for (size_t i = 0; i < n; ++i) {
    if (plan.root[i] != i) plan.offset[i] = plan.offset[plan.root[i]];
  }
  plan.arena_floats = ranges.peak();
  return plan;
}

}  // namespace geniex::backends::cpu
