// Scheduler: places a graph's stages (runs of layers, the embedding, the output head: see
// Graph::begin_stage) on backends and runs them.
//
// Each stage goes to the first unit in preference order (NPU -> GPU -> CPU, or as pinned) whose
// capability answers cover all its ops; consecutive stages on one unit form a segment, cut out
// as a sub-graph (StagePlan) so only values crossing segments are copied. A graph placed on one
// unit runs uncut. When a unit fails at run time with an out-of-memory, unsupported or internal
// error, its stages move down the chain (logged, remembered for that batch size) and the step
// is run again from its start — every state write of a step (CacheWrite of the step's rows) is
// idempotent, so a re-run leaves the same state. Segments whose inputs are ready run
// concurrently when they are on different units; while one runs, the next unit prepares its
// segment (weights upload) on another thread.
//
// A layer limit (set_offload_layers(n), n >= 0) keeps a layered graph's stages off the
// accelerators except the LAST n layers and, when n >= 1, the output head (llama.cpp's -ngl
// order); the embedding stays on the CPU. The other stages' chain is the CPU alone.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/api/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/run_reference.h"
#include "runtime/stage_plan.h"

namespace geniex::runtime {

/// What the user asked for.
enum class DevicePreference { kAuto, kCpu, kGpu, kNpu };

/// "auto", "cpu", "gpu", "npu".
std::string_view device_preference_name(DevicePreference p);

/// Where one run of stages goes.
struct StagePlacement {
  int32_t first_stage = 0;
  int32_t last_stage = 0;
  std::string label;    ///< e.g. "layer 0 .. layer 17"
  std::string backend;  ///< Backend::name()
};

/// One placement decision, for logs and --explain-placement.
struct Placement {
  std::string stage;               ///< "whole model" (one unit) or "N segments"
  std::string backend;             ///< the unit's name, or the units' names joined by " + "
  std::vector<std::string> notes;  ///< why preferred units were skipped (per stage range)
  std::vector<StagePlacement> segments;
};

/// Time and copies of one segment, summed over runs.
struct StageProfile {
  std::string label;
  std::string backend;
  int64_t runs = 0;
  int64_t ns = 0;         ///< wall time inside the backend's run()
  int64_t bytes_in = 0;   ///< boundary bytes read from other segments
  int64_t bytes_out = 0;  ///< boundary bytes written for other segments
};

class Scheduler {
 public:
  using LogFn = std::function<void(const std::string&)>;

  /// `backends` in any order; the preference decides the order tried (kAuto: NPU, GPU, CPU).
  /// kInvalidArgument when `backends` is empty.
  static Result<Scheduler> create(std::vector<std::unique_ptr<backends::Backend>> backends,
                                  DevicePreference preference, LogFn log = {});
  Scheduler(Scheduler&&) noexcept;
  Scheduler& operator=(Scheduler&&) noexcept;
  ~Scheduler();

  /// Places every stage of `graph` (falls back down the preference chain per stage, noting
  /// why). kUnimplemented naming the op when no unit can run some stage.
  Result<Placement> place(const graph::Graph& graph);

  /// Places (once per graph) and runs `graph`, falling back at run time as described above.
  Status run(const graph::Graph& graph, const graph::Bindings& bindings);

  /// The capability table of every unit for the ops of `graph` (op kind x dtypes) and the
  /// placement of its stages, as text for `--explain-placement`.
  std::string explain(const graph::Graph& graph);

  /// At most `n` layers of a layered graph (stages of StageKind kLayer: the last n) and, when
  /// n >= 1, its output head may go to a unit other than the CPU; the embedding and the other
  /// layers go to the CPU. -1 (the default): no limit. n above the layer count is all layers.
  /// Graphs without kLayer stages (a vision encoder) are not limited. Drops cached plans.
  void set_offload_layers(int32_t n);
  [[nodiscard]] int32_t offload_layers() const { return offload_layers_; }

  [[nodiscard]] const Placement& last_placement() const { return last_; }
  [[nodiscard]] DevicePreference preference() const { return preference_; }
  /// Per segment of the plans run so far (same label + backend summed).
  [[nodiscard]] std::vector<StageProfile> profile() const;
  void reset_profile();
  /// Every unit gives back its scratch memory (Backend::release_scratch); not while a run is in
  /// progress.
  void release_scratch();
  /// Run-time fallbacks so far (a unit failed and its stages moved).
  [[nodiscard]] int64_t fallbacks() const { return fallbacks_; }
  /// Host bytes of the boundary buffers of the cached plans.
  [[nodiscard]] int64_t boundary_bytes() const;
  /// Token counts steps must be padded to for the units in the chain that take static shapes
  /// (the first such unit's counts; empty: none).
  [[nodiscard]] std::vector<int32_t> static_batch_tokens() const;
  /// Names of the units, in preference order.
  [[nodiscard]] std::vector<std::string> unit_names() const;

 private:
  struct Plan;
  Scheduler();
  std::vector<backends::Backend*> order() const;
  /// Whether the layer limit lets stage `s` of `g` leave the CPU.
  [[nodiscard]] bool may_offload(const graph::Graph& g, int32_t s) const;
  Result<Placement> place_stages(const graph::Graph& g, std::vector<backends::Backend*>& unit_of);
  Result<Plan*> plan_for(const graph::Graph& g);
  Status execute(Plan& plan, const graph::Graph& g, const graph::Bindings& b, size_t& failed,
                 bool& hook_failed);
  void record(const std::string& label, const std::string& backend, int64_t ns, int64_t in,
              int64_t out);

  std::vector<std::unique_ptr<backends::Backend>> backends_;
  DevicePreference preference_ = DevicePreference::kAuto;
  LogFn log_;
  Placement last_;
  std::string last_logged_;
  std::vector<std::unique_ptr<Plan>> plans_;  ///< most recently used first
  /// (unit, stage, batch tokens) that failed at run time: never placed there again.
  std::set<std::tuple<const backends::Backend*, int32_t, int32_t>> banned_;
  std::unique_ptr<std::mutex> profile_mu_;
  std::vector<StageProfile> profile_;
  int64_t fallbacks_ = 0;
  int32_t offload_layers_ = -1;
};

}  // namespace geniex::runtime
