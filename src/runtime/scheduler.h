// Scheduler: places graphs on backends. Today it places a whole graph on one backend — the
// first in preference order whose capability answers cover every op — and says why the others
// were passed over; stage splitting across units comes with the GPU and NPU backends.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph/run_reference.h"

namespace geniex::runtime {

/// What the user asked for.
enum class DevicePreference { kAuto, kCpu, kGpu, kNpu };

/// "auto", "cpu", "gpu", "npu".
std::string_view device_preference_name(DevicePreference p);

/// One placement decision, for logs and --explain-placement.
struct Placement {
  std::string stage;               ///< e.g. "whole model"
  std::string backend;             ///< Backend::name() it runs on
  std::vector<std::string> notes;  ///< why preferred units were skipped
};

class Scheduler {
 public:
  using LogFn = std::function<void(const std::string&)>;

  /// `backends` in any order; the preference decides the order tried (kAuto: NPU, GPU, CPU).
  /// kInvalidArgument when `backends` is empty.
  static Result<Scheduler> create(std::vector<std::unique_ptr<backends::Backend>> backends,
                                  DevicePreference preference, LogFn log = {});

  /// Chooses the backend for `graph` (falls back down the preference chain, logging why).
  /// kUnimplemented naming the op when no backend can run it.
  Result<Placement> place(const graph::Graph& graph);

  /// Places (once per distinct decision) and runs `graph`.
  Status run(const graph::Graph& graph, const graph::Bindings& bindings);

  [[nodiscard]] const Placement& last_placement() const { return last_; }
  [[nodiscard]] DevicePreference preference() const { return preference_; }

 private:
  Scheduler() = default;
  /// Backends in the order to try.
  std::vector<backends::Backend*> order() const;

  std::vector<std::unique_ptr<backends::Backend>> backends_;
  DevicePreference preference_ = DevicePreference::kAuto;
  LogFn log_;
  Placement last_;
  backends::Backend* chosen_ = nullptr;
  bool logged_ = false;
  uint64_t placed_key_ = 0;  ///< structure_key() of the graph last placed (0: none)
};

}  // namespace geniex::runtime
