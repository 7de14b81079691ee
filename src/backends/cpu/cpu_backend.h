// The CPU backend: runs a whole graph on the host with a thread pool, SIMD dot-product kernels
// chosen at run time (backends/cpu/kernels) and activation buffers planned by liveness and
// reused across runs.
#pragma once

#include <memory>
#include <string>

#include "backends/api/backend.h"
#include "core/status.h"

namespace geniex::backends {

struct CpuBackendOptions {
  int n_threads = 0;             ///< 0: one per hardware thread
  bool batch_invariant = false;  ///< turn on cpu::batch_invariant() (process-wide, see isa.h)
};

/// Creates the CPU backend. Never fails on a supported host; kept a Result for symmetry with
/// device backends.
Result<std::unique_ptr<Backend>> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace geniex::backends
