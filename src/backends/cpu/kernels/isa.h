// Run-time instruction-set detection for the CPU kernels: which SIMD levels this binary was
// built with and this CPU (and OS) can run, and the process-wide cap that tests, benchmarks and
// CpuBackendOptions::isa (ModelBuilder::with_tuning) set.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace geniex::cpu {

/// SIMD levels, ordered within each family: x86 kScalar < kSse4 < kAvx2 < kAvx512 < kAvx512Vnni,
/// Arm kScalar < kNeon < kNeonDotprod < kNeonI8mm. kSse4 is SSE4.1 + SSSE3 (the AVX2 kernels with
/// 256-bit operations split in two, no FMA, F16 converted in software); kAvx2 implies FMA and
/// F16C; kAvx512 implies AVX512F+BW+VL.
enum class Isa : uint8_t {
  kScalar,
  kSse4,
  kAvx2,
  kAvx512,
  kAvx512Vnni,
  kNeon,
  kNeonDotprod,
  kNeonI8mm
};

/// True for the x86 levels with AVX2, FMA and F16C (kAvx2, kAvx512, kAvx512Vnni).
constexpr bool has_f16c(Isa isa) {
  return isa == Isa::kAvx2 || isa == Isa::kAvx512 || isa == Isa::kAvx512Vnni;
}

/// True for the x86 SIMD levels (kSse4, kAvx2, kAvx512, kAvx512Vnni).
constexpr bool is_x86_simd(Isa isa) { return isa == Isa::kSse4 || has_f16c(isa); }

/// True for the Arm SIMD levels (kNeon, kNeonDotprod, kNeonI8mm).
constexpr bool is_neon(Isa isa) {
  return isa == Isa::kNeon || isa == Isa::kNeonDotprod || isa == Isa::kNeonI8mm;
}

/// Lower-case name, e.g. "avx512vnni", "neon_dotprod" (the CpuTuning::isa spelling).
std::string_view isa_name(Isa isa);

/// Parses an isa_name() spelling; nullopt if unknown.
std::optional<Isa> parse_isa(std::string_view name);

/// The next lower level of the same family (kScalar for kSse4/kNeon and for kScalar itself).
Isa lower_isa(Isa isa);

/// True when `isa` is compiled into this binary and the CPU and OS support it.
bool isa_available(Isa isa);

/// The best ISA of this CPU among those compiled in, ignoring any cap (not cached).
Isa cpu_isa();

/// The ISA to dispatch to given the CPU's best `best` and a requested level `want` (nullopt:
/// none): `want` if it is available and not above `best` in its family, else `best`.
Isa cap_isa(Isa best, std::optional<Isa> want);

/// The level every kernel dispatches to: cpu_isa(), or cap_isa(cpu_isa(), want) after
/// set_isa_cap(want). Cheap (one atomic load after the first call).
Isa detect_isa();

/// Caps detect_isa() at `want` (cap_isa's rule; nullopt: back to cpu_isa()) for the rest of the
/// process. Process-wide: the kernels are shared by every backend and model in the process, so
/// set it before building them (CpuBackendOptions::isa does, at make_cpu_backend). A packed
/// weight keeps the kernels of the level it was packed at.
void set_isa_cap(std::optional<Isa> want);

/// Whether every matmul output element is computed the same way whatever the number of
/// activation rows, so a request's output is bit-identical alone or batched, and with or
/// without a reused prefix. Costs single-row speed for the 32-element block types (their GEMV
/// then runs through the GEMM register tiles). K-quants, F16, F32 and BF16 are invariant either
/// way. On once a CPU backend was made with CpuBackendOptions::batch_invariant
/// (ModelBuilder::with_deterministic), or enable_batch_invariant() was called (kernel tests'
/// --batch-invariant). Process-wide: the kernels are shared by every model in the process.
bool batch_invariant();
/// Turns batch_invariant() on for the rest of the process.
void enable_batch_invariant();

/// Every ISA compiled in and runnable here, kScalar first, in increasing order.
std::vector<Isa> available_isas();

}  // namespace geniex::cpu
