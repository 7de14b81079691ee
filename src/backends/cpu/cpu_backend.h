// The CPU backend: runs a whole graph on the host with a thread pool, SIMD dot-product kernels
// chosen at run time (backends/cpu/kernels) and activation buffers planned by liveness and
// reused across runs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "backends/api/backend.h"
#include "backends/cpu/kernels/isa.h"
#include "core/status.h"

namespace geniex::backends {

/// Which matmul weights the backend repacks into the kernels' row-interleaved layouts
/// (cpu::repack_enabled documents the default set).
enum class CpuRepack : uint8_t {
  kDefault,  ///< the measured default set
  kNone,     ///< none: every matmul through the row kernels (A/B runs)
  kAll,      ///< every type with a packed kernel (adds Q6_K, and Q4_K on NEON)
};

/// Options of one CPU backend. The process-wide ones (the kernels are shared by every backend
/// in the process) are applied by make_cpu_backend and stay for the rest of the process.
struct CpuBackendOptions {
  int n_threads = 0;             ///< 0: one per hardware thread
  bool batch_invariant = false;  ///< turn on cpu::batch_invariant() (process-wide, see isa.h)
  /// Cap of the kernels' SIMD level (process-wide, cpu::set_isa_cap); nullopt: leave it.
  std::optional<::geniex::cpu::Isa> isa = std::nullopt;
  CpuRepack repack = CpuRepack::kDefault;  ///< which matmul weights are repacked
  bool huge_pages = true;  ///< weight copies on transparent huge pages (core/huge_buffer.h)
  /// GEMV prefetch distance in bytes (process-wide, cpu::set_gemv_prefetch_bytes); -1: leave it.
  int64_t gemv_prefetch_bytes = -1;
  /// GEMV weight streams, 1..4 (process-wide, cpu::set_gemv_streams); 0: leave it.
  int gemv_streams = 0;
};

/// Creates the CPU backend. Never fails on a supported host; kept a Result for symmetry with
/// device backends.
Result<std::unique_ptr<Backend>> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace geniex::backends
