// The units a Model may use, from the user's device preference: the CPU always; an OpenCL
// device and NPU plugins when the preference allows them. What was skipped and why goes to the
// log (and into the scheduler's placement notes through the missing units).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "core/status.h"
#include "geniex/geniex.hpp"

namespace geniex::engine {

struct BackendSetOptions {
  Device device = Device::automatic();
  int32_t n_threads = 0;
  std::string plugin_dir;      ///< NPU plugins folder; empty: the default folders
  std::string npu_config;      ///< the plugins' config string (ModelBuilder::with_npu_config)
  bool deterministic = false;  ///< batch-invariant CPU kernels (ModelBuilder::with_deterministic)
  BackendTuning tuning;        ///< CPU and OpenCL tuning (ModelBuilder::with_tuning)
  std::function<void(const std::string&)> log;
  /// Where the user should look even without a log (ModelInfo::warnings); may be null.
  std::vector<std::string>* warnings = nullptr;
};

/// The backends for `options.device`:
/// - cpu: the CPU only;
/// - gpu: the first OpenCL device (any type: a CPU OpenCL driver such as PoCL too), then CPU;
/// - npu: every NPU plugin found, OpenCL GPUs (GPU-type devices only), then CPU;
/// - auto: NPU plugins except the reference plugin (a conformance target that computes on the
///   host), OpenCL GPU-type devices, then CPU.
/// Errors: an unknown CpuTuning::isa or OpenclTuning::disabled_ops name (kInvalidArgument).
Result<std::vector<std::unique_ptr<backends::Backend>>> make_backends(
    const BackendSetOptions& options);

}  // namespace geniex::engine
