// The backend interface: a device that can run (part of) a graph. Backends say per op whether
// they run it natively, emulated, or not at all; the runtime's scheduler places graphs on them
// from those answers and never includes a concrete backend.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "graph/graph.h"
#include "graph/run_reference.h"

namespace geniex::backends {

/// The kind of unit a backend drives.
enum class DeviceKind : uint8_t { kCpu, kGpu, kNpu };

/// "cpu", "gpu", "npu".
std::string_view device_kind_name(DeviceKind kind);

/// How well a backend runs one op.
enum class Support : uint8_t {
  kNative,       ///< a kernel of its own
  kEmulated,     ///< runs, through a slower generic path (e.g. the scalar reference)
  kUnsupported,  ///< cannot run it
};

/// "native", "emulated", "unsupported".
std::string_view support_name(Support s);

/// A backend's answer for one op, with the reason when it is not native.
struct OpSupport {
  Support level = Support::kUnsupported;
  std::string reason;
};

/// A device able to run graphs. Implementations must be safe to call from one thread at a
/// time (the scheduler serializes runs per backend).
class Backend {
 public:
  virtual ~Backend() = default;

  /// Short name for logs and the placement table, e.g. "cpu(avx2)".
  [[nodiscard]] virtual std::string name() const = 0;
  /// What kind of unit this is.
  [[nodiscard]] virtual DeviceKind kind() const = 0;
  /// Whether op node `id` of `graph` (with its input types and shapes) can run here.
  [[nodiscard]] virtual OpSupport supports(const graph::Graph& graph, graph::NodeId id) const = 0;
  /// Runs every op of `graph` with `bindings`, with the contract of graph::run_reference:
  /// bound outputs are filled, states are updated in place, and any error is a Status that
  /// names the node.
  virtual Status run(const graph::Graph& graph, const graph::Bindings& bindings) = 0;
  /// Token counts this unit's graphs may have (ascending), e.g. {1, 128} for an NPU that
  /// compiles static shapes; empty: any. The runtime pads steps to them.
  [[nodiscard]] virtual std::vector<int32_t> static_batch_tokens() const { return {}; }
  /// Optional: get ready to run `graph` (upload its weights, compile kernels) without running
  /// it. The scheduler calls it for the next stage while the current one runs on another unit,
  /// from another thread, never concurrently with this backend's own run(). Default: nothing.
  virtual Status prepare(const graph::Graph& /*graph*/, const graph::Bindings& /*bindings*/) {
    return {};
  }
  /// Optional: give back scratch memory sized by the largest graph run so far (activation
  /// arenas, per-thread buffers); the next run regrows what it needs. Called between runs, e.g.
  /// after a vision encoder whose activations dwarf a decode step's. Default: nothing.
  virtual void release_scratch() {}
};

}  // namespace geniex::backends
