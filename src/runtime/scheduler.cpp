#include "runtime/scheduler.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <optional>

namespace geniex::runtime {

using backends::DeviceKind;
using graph::Graph;
using graph::NodeId;
using graph::NodeRole;

namespace {

constexpr size_t kMaxPlans = 8;

std::string stage_name(const Graph& g, int32_t s) {
  std::string l = g.stage_label(s);
  return l.empty() ? "stage " + std::to_string(s) : l;
}

std::string range_name(const Graph& g, int32_t first, int32_t last) {
  return first == last ? stage_name(g, first) : stage_name(g, first) + " .. " + stage_name(g, last);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Errors after which a unit's stages move down the chain. Others (bad bindings, out of range)
// are the caller's and would fail the same way anywhere.
bool unit_failure(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kUnimplemented ||
         s.code() == StatusCode::kInternal || s.code() == StatusCode::kIoError;
}

}  // namespace

struct Scheduler::Plan {
  uint64_t key = 0;
  Placement placement;
  backends::Backend* single = nullptr;  ///< the whole graph on one unit (no cut)
  std::optional<StagePlan> stages;      ///< else the cut graph
  bool prepared = false;
};

std::string_view device_preference_name(DevicePreference p) {
  switch (p) {
    case DevicePreference::kAuto: return "auto";
    case DevicePreference::kCpu: return "cpu";
    case DevicePreference::kGpu: return "gpu";
    case DevicePreference::kNpu: return "npu";
  }
  return "unknown";
}

Scheduler::Scheduler() : profile_mu_(std::make_unique<std::mutex>()) {}
Scheduler::Scheduler(Scheduler&&) noexcept = default;
Scheduler& Scheduler::operator=(Scheduler&&) noexcept = default;
Scheduler::~Scheduler() = default;

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
  std::vector<backends::Backend*> out;
  for (DeviceKind k : kinds) {
    for (const auto& b : backends_) {
      if (b->kind() == k) out.push_back(b.get());
    }
  }
  return out;
}

void Scheduler::set_offload_layers(int32_t n) {
  offload_layers_ = n < 0 ? -1 : n;
  plans_.clear();
}

bool Scheduler::may_offload(const Graph& g, int32_t s) const {
  if (offload_layers_ < 0) return true;
  const int32_t n_layers = g.n_layer_stages();
  if (n_layers == 0) return true;  // not a layered graph: the limit does not apply
  switch (g.stage_kind(s)) {
    case graph::StageKind::kLayer: return g.stage_layer(s) >= n_layers - offload_layers_;
    case graph::StageKind::kOutput: return offload_layers_ >= 1;
    case graph::StageKind::kInput:
    case graph::StageKind::kOther: break;
  }
  return false;
}

std::vector<int32_t> Scheduler::static_batch_tokens() const {
  for (auto* b : order()) {
    // No stage of a layered graph leaves the CPU: its steps need no padding.
    if (offload_layers_ == 0 && b->kind() != DeviceKind::kCpu) continue;
    auto v = b->static_batch_tokens();
    if (!v.empty()) return v;
  }
  return {};
}

std::vector<std::string> Scheduler::unit_names() const {
  std::vector<std::string> out;
  for (auto* b : order()) out.push_back(b->name());
  return out;
}

Result<Placement> Scheduler::place_stages(const Graph& g,
                                          std::vector<backends::Backend*>& unit_of) {
  Placement p;
  const auto chain = order();
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
  const int32_t n_stages = g.n_stages();
  std::vector<std::vector<NodeId>> ops(static_cast<size_t>(n_stages));
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).role == NodeRole::kOp) ops[static_cast<size_t>(g.node(id).stage)].push_back(id);
  }
  unit_of.assign(static_cast<size_t>(n_stages), nullptr);
  // Notes merged over consecutive stages with the same unit, op kind and reason.
  struct Note {
    int32_t first, last;
    std::string unit, op, node, reason;
  };
  std::vector<Note> notes;
  // Stages the layer limit keeps on the CPU although a unit above it comes first.
  std::vector<int32_t> held;
  for (int32_t s = 0; s < n_stages; ++s) {
    if (ops[static_cast<size_t>(s)].empty()) continue;
    const bool limited = !may_offload(g, s);
    if (limited && chain.front()->kind() != DeviceKind::kCpu) held.push_back(s);
    for (backends::Backend* b : chain) {
      if (limited && b->kind() != DeviceKind::kCpu) continue;
      std::string op, node, why;
      if (banned_.count({b, s, g.batch_tokens()}) != 0) {
        why = "failed here at run time";
      }
      for (NodeId id : ops[static_cast<size_t>(s)]) {
        if (!why.empty()) break;
        const auto sup = b->supports(g, id);
        if (sup.level == backends::Support::kUnsupported) {
          op = std::string(graph::op_name(g.node(id).op));
          node = g.node(id).name;
          why = sup.reason;
        }
      }
      if (why.empty()) {
        unit_of[static_cast<size_t>(s)] = b;
        break;
      }
      auto same = [&](const Note& n) {
        return n.last + 1 == s && n.unit == b->name() && n.op == op && n.reason == why;
      };
      auto it = std::find_if(notes.begin(), notes.end(), same);
      if (it != notes.end()) {
        it->last = s;
      } else {
        notes.push_back({s, s, b->name(), op, node, why});
      }
    }
    if (unit_of[static_cast<size_t>(s)] == nullptr) {
      std::string all;
      for (const auto& n : notes) {
        if (n.first <= s && s <= n.last) {
          all += (all.empty() ? "" : "; ") + n.unit + " cannot run " + n.op + " (" + n.node +
                 "): " + n.reason;
        }
      }
      return unimplemented("no backend can run " + stage_name(g, s) + " of this model: " + all);
    }
  }
  for (const auto& n : notes) {
    std::string text = n.op.empty()
                           ? n.unit + " " + n.reason
                           : n.unit + " cannot run " + n.op + " (" + n.node + "): " + n.reason;
    if (n_stages > 1) text = range_name(g, n.first, n.last) + ": " + text;
    p.notes.push_back(std::move(text));
  }
  if (!held.empty()) {
    // "embedding, layer 0 .. layer 15 on the CPU: --offload-layers 2"
    std::string text;
    for (size_t i = 0; i < held.size();) {
      size_t j = i;
      while (j + 1 < held.size() && held[j + 1] == held[j] + 1 &&
             g.stage_kind(held[j + 1]) == g.stage_kind(held[i])) {
        ++j;
      }
      text += (text.empty() ? "" : ", ") + range_name(g, held[i], held[j]);
      i = j + 1;
    }
    p.notes.push_back(text + " on the CPU: --offload-layers " + std::to_string(offload_layers_));
  }
  // Segments: consecutive stages on one unit.
  for (int32_t s = 0; s < n_stages; ++s) {
    backends::Backend* u = unit_of[static_cast<size_t>(s)];
    if (u == nullptr) continue;
    if (p.segments.empty() || p.segments.back().backend != u->name()) {
      p.segments.push_back({s, s, {}, u->name()});
    }
    p.segments.back().last_stage = s;
  }
  for (auto& seg : p.segments) seg.label = range_name(g, seg.first_stage, seg.last_stage);
  if (p.segments.size() <= 1) {
    p.stage = "whole model";
    p.backend = p.segments.empty() ? chain.front()->name() : p.segments.front().backend;
  } else {
    p.stage = std::to_string(p.segments.size()) + " segments";
    for (const auto& seg : p.segments) {
      if (p.backend.find(seg.backend) == std::string::npos) {
        p.backend += (p.backend.empty() ? "" : " + ") + seg.backend;
      }
    }
  }
  return p;
}

Result<Placement> Scheduler::place(const Graph& g) {
  std::vector<backends::Backend*> unit_of;
  return place_stages(g, unit_of);
}

Result<Scheduler::Plan*> Scheduler::plan_for(const Graph& g) {
  const uint64_t key = g.structure_key();
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (plans_[i]->key == key) {
      std::rotate(plans_.begin(), plans_.begin() + static_cast<std::ptrdiff_t>(i),
                  plans_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return plans_.front().get();
    }
  }
  std::vector<backends::Backend*> unit_of;
  GENIEX_ASSIGN_OR_RETURN(Placement p, place_stages(g, unit_of));
  auto plan = std::make_unique<Plan>();
  plan->key = key;
  if (p.segments.size() <= 1) {
    plan->single = order().front();
    for (auto* u : unit_of) {
      if (u != nullptr) plan->single = u;
    }
  } else {
    GENIEX_ASSIGN_OR_RETURN(StagePlan sp, StagePlan::build(g, unit_of));
    plan->stages.emplace(std::move(sp));
  }
  plan->placement = std::move(p);
  plans_.insert(plans_.begin(), std::move(plan));
  if (plans_.size() > kMaxPlans) plans_.pop_back();
  return plans_.front().get();
}

void Scheduler::record(const std::string& label, const std::string& backend, int64_t ns, int64_t in,
                       int64_t out) {
  std::lock_guard<std::mutex> lock(*profile_mu_);
  for (auto& p : profile_) {
    if (p.label == label && p.backend == backend) {
      ++p.runs;
      p.ns += ns;
      p.bytes_in += in;
      p.bytes_out += out;
      return;
    }
  }
  profile_.push_back({label, backend, 1, ns, in, out});
}

std::vector<StageProfile> Scheduler::profile() const {
  std::lock_guard<std::mutex> lock(*profile_mu_);
  return profile_;
}

void Scheduler::release_scratch() {
  for (auto& b : backends_) b->release_scratch();
}

void Scheduler::reset_profile() {
  std::lock_guard<std::mutex> lock(*profile_mu_);
  profile_.clear();
}

int64_t Scheduler::boundary_bytes() const {
  int64_t n = 0;
  for (const auto& p : plans_) {
    if (p->stages) n += p->stages->boundary_bytes();
  }
  return n;
}

Status Scheduler::execute(Plan& plan, const Graph& g, const graph::Bindings& b, size_t& failed,
                          bool& hook_failed) {
  failed = 0;
  hook_failed = false;
  if (plan.single != nullptr) {
    const int64_t t0 = now_ns();
    Status s;
    if (order().size() > 1 && graph::BindingsAccess(b).has_hooks()) {
      // Hooks are the caller's (e.g. KV paging): their failures are not the unit's.
      graph::Bindings wrapped = b;
      for (NodeId id = 0; id < g.size(); ++id) {
        if (graph::BindingsAccess(b).has_hook(id)) {
          wrapped.add_hook(id, StagePlan::forward_hook(b, id, &hook_failed));
        }
      }
      s = plan.single->run(g, wrapped);
    } else {
      s = plan.single->run(g, b);
    }
    record(plan.placement.stage, plan.single->name(), now_ns() - t0, 0, 0);
    return s;
  }
  StagePlan& sp = *plan.stages;
  const auto& segs = sp.segments();
  std::vector<bool> done(segs.size(), false);
  std::vector<graph::Bindings> binds(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    binds[i] = sp.bindings_for(i, b, &hook_failed);
  }
  size_t n_done = 0;
  while (n_done < segs.size()) {
    // Ready segments, at most one per unit.
    std::vector<size_t> wave;
    for (size_t i = 0; i < segs.size(); ++i) {
      if (done[i]) continue;
      const bool ready = std::all_of(segs[i].deps.begin(), segs[i].deps.end(),
                                     [&](int32_t d) { return done[static_cast<size_t>(d)]; });
      const bool unit_busy = std::any_of(wave.begin(), wave.end(),
                                         [&](size_t w) { return segs[w].unit == segs[i].unit; });
      if (ready && !unit_busy) wave.push_back(i);
    }
    // The first segment not in this wave whose unit is idle prepares meanwhile (first run only).
    std::optional<size_t> next;
    if (!plan.prepared) {
      for (size_t i = 0; i < segs.size() && !next; ++i) {
        const bool in_wave = std::find(wave.begin(), wave.end(), i) != wave.end();
        const bool unit_busy = std::any_of(wave.begin(), wave.end(),
                                           [&](size_t w) { return segs[w].unit == segs[i].unit; });
        if (!done[i] && !in_wave && !unit_busy) next = i;
      }
    }
    std::vector<Status> st(wave.size());
    std::vector<int64_t> ns(wave.size());
    auto timed = [&](size_t k) {
      const int64_t t0 = now_ns();
      st[k] = segs[wave[k]].unit->run(segs[wave[k]].sub, binds[wave[k]]);
      ns[k] = now_ns() - t0;
    };
    std::vector<std::future<void>> others;
    std::future<Status> prep;
    if (next) {
      prep = std::async(std::launch::async,
                        [&, i = *next] { return segs[i].unit->prepare(segs[i].sub, binds[i]); });
    }
    for (size_t k = 1; k < wave.size(); ++k) {
      others.push_back(std::async(std::launch::async, timed, k));
    }
    timed(0);
    for (auto& f : others) f.get();
    if (prep.valid()) (void)prep.get();  // a failed prepare shows again when the segment runs
    for (size_t k = 0; k < wave.size(); ++k) {
      const size_t i = wave[k];
      const auto [in, out] = sp.copy_bytes(i);
      record(range_name(g, segs[i].first_stage, segs[i].last_stage), segs[i].unit->name(), ns[k],
             in, out);
      if (!st[k].ok()) {
        failed = i;
        return st[k];
      }
      done[i] = true;
      ++n_done;
    }
  }
  plan.prepared = true;
  return {};
}

Status Scheduler::run(const Graph& g, const graph::Bindings& bindings) {
  // Each failure bans one (unit, stage range) and every stage has a CPU at the end of its chain,
  // so the number of retries is bounded by units x stages.
  const size_t max_attempts = backends_.size() * static_cast<size_t>(g.n_stages()) + 1;
  Status last_error;
  for (size_t attempt = 0; attempt < max_attempts; ++attempt) {
    auto planned = plan_for(g);
    if (!planned.ok()) return last_error.ok() ? planned.status() : last_error;
    Plan& plan = **planned;
    std::string line = "placement: ";
    if (plan.placement.segments.size() <= 1) {
      line += plan.placement.stage + " -> " + plan.placement.backend;
    } else {
      for (size_t i = 0; i < plan.placement.segments.size(); ++i) {
        const auto& s = plan.placement.segments[i];
        line += (i ? ", " : "") + s.label + " -> " + s.backend;
      }
    }
    for (const auto& n : plan.placement.notes) line += " (" + n + ")";
    if (line != last_logged_) {
      if (log_) log_(line);
      last_logged_ = line;
    }
    last_ = plan.placement;
    size_t failed = 0;
    bool hook_failed = false;
    Status s = execute(plan, g, bindings, failed, hook_failed);
    if (s.ok()) return s;
    if (hook_failed || !unit_failure(s)) return s;
    // Which unit and stages failed.
    backends::Backend* unit = plan.single;
    int32_t first = 0, last = g.n_stages() - 1;
    if (plan.stages) {
      const Segment& seg = plan.stages->segments()[failed];
      unit = seg.unit;
      first = seg.first_stage;
      last = seg.last_stage;
    }
    const auto chain = order();
    if (unit == chain.back()) return s;  // nothing below the last unit
    for (int32_t st = first; st <= last; ++st) banned_.insert({unit, st, g.batch_tokens()});
    ++fallbacks_;
    if (log_) {
      log_("fallback: " + range_name(g, first, last) + " moves off " + unit->name() + " (" +
           s.to_string() + "); the step runs again");
    }
    // Drop the plan so it is placed again without that unit.
    plans_.erase(std::remove_if(plans_.begin(), plans_.end(),
                                [&](const auto& p) { return p->key == g.structure_key(); }),
                 plans_.end());
    last_error = s;
  }
  return last_error;
}

std::string Scheduler::explain(const Graph& g) {
  std::string out =
      "units in preference order (" + std::string(device_preference_name(preference_)) + "):";
  const auto chain = order();
  for (auto* b : chain) {
    out += " " + b->name() + " [" + std::string(backends::device_kind_name(b->kind())) + "]";
  }
  out += "\ncapability table (op / input types: answer per unit):\n";
  std::map<std::string, NodeId> first_of;
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto& n = g.node(id);
    if (n.role != NodeRole::kOp) continue;
    std::string key(graph::op_name(n.op));
    key += " /";
    for (NodeId in : n.inputs) key += " " + std::string(ggml_type_name(g.node(in).desc.dtype));
    first_of.emplace(key, id);
  }
  for (const auto& [key, id] : first_of) {
    out += "  " + key + ":";
    for (auto* b : chain) {
      const auto sup = b->supports(g, id);
      out += "  " + b->name() + "=" + std::string(backends::support_name(sup.level));
      if (sup.level != backends::Support::kNative && !sup.reason.empty()) {
        out += " (" + sup.reason + ")";
      }
    }
    out += "\n";
  }
  std::vector<backends::Backend*> unit_of;
  auto p = place_stages(g, unit_of);
  if (!p.ok()) return out + "placement: " + p.status().to_string() + "\n";
  out += "placement (" + std::to_string(g.batch_tokens()) + "-token step):\n";
  for (const auto& s : p->segments) out += "  " + s.label + " -> " + s.backend + "\n";
  for (const auto& n : p->notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace geniex::runtime
