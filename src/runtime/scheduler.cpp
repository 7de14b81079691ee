#include "runtime/scheduler.h"

#include <algorithm>

namespace geniex::runtime {

using backends::DeviceKind;

std::string_view device_preference_name(DevicePreference p) {
  switch (p) {
    case DevicePreference::kAuto: return "auto";
    case DevicePreference::kCpu: return "cpu";
    case DevicePreference::kGpu: return "gpu";
    case DevicePreference::kNpu: return "npu";
  }
  return "unknown";
}

Result<Scheduler> Scheduler::create(std::vector<std::unique_ptr<backends::Backend>> backends,
                                    DevicePreference preference, LogFn log) {
  if (backends.empty()) return invalid_argument("scheduler: no backends");
  Scheduler s;
  s.backends_ = std::move(backends);
  s.preference_ = preference;
  s.log_ = std::move(log);
  return s;
}

std::vector<backends::Backend*> Scheduler::order() const {
  // The chain always ends on the CPU; a pinned unit goes first.
  std::vector<DeviceKind> kinds = {DeviceKind::kNpu, DeviceKind::kGpu, DeviceKind::kCpu};
  if (preference_ == DevicePreference::kCpu) kinds = {DeviceKind::kCpu};
  if (preference_ == DevicePreference::kGpu) kinds = {DeviceKind::kGpu, DeviceKind::kCpu};
  if (preference_ == DevicePreference::kNpu) {
    kinds = {DeviceKind::kNpu, DeviceKind::kGpu, DeviceKind::kCpu};
  }
  std::vector<backends::Backend*> out;
  for (DeviceKind k : kinds) {
    for (const auto& b : backends_) {
      if (b->kind() == k) out.push_back(b.get());
    }
  }
  return out;
}

Result<Placement> Scheduler::place(const graph::Graph& g) {
  Placement p;
  p.stage = "whole model";
  const auto chain = order();
  // Say when the pinned unit has no backend in this build.
  if (preference_ == DevicePreference::kGpu || preference_ == DevicePreference::kNpu) {
    const DeviceKind want =
        preference_ == DevicePreference::kGpu ? DeviceKind::kGpu : DeviceKind::kNpu;
    const bool have = std::any_of(backends_.begin(), backends_.end(),
                                  [&](const auto& b) { return b->kind() == want; });
    if (!have) {
      p.notes.push_back(std::string(backends::device_kind_name(want)) +
                        ": no backend available on this machine/build");
    }
  }
  for (backends::Backend* b : chain) {
    std::string why;
    for (graph::NodeId id = 0; id < g.size() && why.empty(); ++id) {
      if (g.node(id).role != graph::NodeRole::kOp) continue;
      const auto s = b->supports(g, id);
      if (s.level == backends::Support::kUnsupported) {
        why =
            std::string(graph::op_name(g.node(id).op)) + " (" + g.node(id).name + "): " + s.reason;
      }
    }
    if (why.empty()) {
      p.backend = b->name();
      chosen_ = b;
      return p;
    }
    p.notes.push_back(b->name() + " cannot run " + why);
  }
  std::string all;
  for (const auto& n : p.notes) all += (all.empty() ? "" : "; ") + n;
  return unimplemented("no backend can run this model: " + all);
}

Status Scheduler::run(const graph::Graph& g, const graph::Bindings& bindings) {
  // The same graph again (a cached decode step): its placement stands.
  if (chosen_ != nullptr && placed_key_ == g.structure_key()) return chosen_->run(g, bindings);
  placed_key_ = 0;
  GENIEX_ASSIGN_OR_RETURN(Placement p, place(g));
  placed_key_ = g.structure_key();
  if (!logged_ || p.backend != last_.backend) {
    if (log_) {
      std::string line = "placement: " + p.stage + " -> " + p.backend;
      for (const auto& n : p.notes) line += " (" + n + ")";
      log_(line);
    }
    logged_ = true;
  }
  last_ = std::move(p);
  return chosen_->run(g, bindings);
}

}  // namespace geniex::runtime
