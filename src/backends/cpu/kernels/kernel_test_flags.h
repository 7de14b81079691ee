// Command-line flags of the CPU kernel test binaries (kernel_test_main.cpp), which set the
// process-wide kernel settings before any test runs, as CpuBackendOptions does for a model:
//   --isa=NAME          cap the kernels at that level (set_isa_cap)
//   --batch-invariant   enable_batch_invariant()
//   --gemv-streams=N    set_gemv_streams(N)
//   --expect-isa=NAME   the level dispatch must pick (the emulated-CPU runs: ctest's *_sse4_cpu)
#pragma once

#include <optional>

#include "backends/cpu/kernels/isa.h"

namespace geniex::cpu::testing {

/// --expect-isa's level, if given.
std::optional<Isa> expected_isa();
/// --isa's level, if given.
std::optional<Isa> requested_isa();

}  // namespace geniex::cpu::testing
