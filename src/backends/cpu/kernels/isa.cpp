// CPU feature detection: cpuid + xgetbv on x86-64 (the OS must save the AVX / AVX-512 state),
// getauxval(AT_HWCAP/AT_HWCAP2) on aarch64 Linux.
#include "backends/cpu/kernels/isa.h"

#include <atomic>

#if defined(GENIEX_CPU_X86)
#include <cpuid.h>
#elif defined(GENIEX_CPU_ARM64)
#include <sys/auxv.h>
#endif

namespace geniex::cpu {
namespace {

struct IsaName {
  Isa isa;
  std::string_view name;
};
constexpr IsaName kNames[] = {
    {Isa::kScalar, "scalar"},
    {Isa::kSse4, "sse4"},
    {Isa::kAvx2, "avx2"},
    {Isa::kAvx512, "avx512"},
    {Isa::kAvx512Vnni, "avx512vnni"},
    {Isa::kNeon, "neon"},
    {Isa::kNeonDotprod, "neon_dotprod"},
    {Isa::kNeonI8mm, "neon_i8mm"},
};

// Feature bits of the running CPU; computed once.
struct CpuFeatures {
  bool sse4 = false;  // SSE4.1 + SSSE3
  bool avx2 = false;  // AVX2 + FMA + F16C with OS-enabled YMM state
  bool avx512 = false;
  bool avx512vnni = false;
  bool neon = false;
  bool dotprod = false;
  bool i8mm = false;
};

CpuFeatures probe() {
  CpuFeatures f;
#if defined(GENIEX_CPU_X86)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  f.sse4 = (c & (1u << 19)) != 0 && (c & (1u << 9)) != 0;
  const bool osxsave = (c & (1u << 27)) != 0;
  const bool avx = (c & (1u << 28)) != 0;
  const bool fma = (c & (1u << 12)) != 0;
  const bool f16c = (c & (1u << 29)) != 0;
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_os = (xcr0_lo & 0x6u) == 0x6u;
  const bool zmm_os = (xcr0_lo & 0xE6u) == 0xE6u;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  const bool avx2 = (b & (1u << 5)) != 0;
  const bool avx512f = (b & (1u << 16)) != 0;
  const bool avx512bw = (b & (1u << 30)) != 0;
  const bool avx512vl = (b & (1u << 31)) != 0;
  const bool vnni = (c & (1u << 11)) != 0;
  f.avx2 = f.sse4 && ymm_os && avx2 && fma && f16c;
  f.avx512 = f.avx2 && zmm_os && avx512f && avx512bw && avx512vl;
  f.avx512vnni = f.avx512 && vnni;
#elif defined(GENIEX_CPU_ARM64)
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw & HWCAP_ASIMD) != 0;
  f.dotprod = f.neon && (hw & HWCAP_ASIMDDP) != 0;
  f.i8mm = f.dotprod && (hw2 & HWCAP2_I8MM) != 0;
#endif
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = probe();
  return f;
}

bool compiled_in(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
#if defined(GENIEX_CPU_X86)
    case Isa::kSse4:
    case Isa::kAvx2:
    case Isa::kAvx512:
    case Isa::kAvx512Vnni: return true;
#endif
#if defined(GENIEX_CPU_ARM64)
    case Isa::kNeon:
    case Isa::kNeonDotprod:
    case Isa::kNeonI8mm: return true;
#endif
    default: return false;
  }
}

}  // namespace

std::string_view isa_name(Isa isa) {
  for (const auto& n : kNames) {
    if (n.isa == isa) return n.name;
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (const auto& n : kNames) {
    if (n.name == name) return n.isa;
  }
  return std::nullopt;
}

Isa lower_isa(Isa isa) {
  switch (isa) {
    case Isa::kAvx512Vnni: return Isa::kAvx512;
    case Isa::kAvx512: return Isa::kAvx2;
    case Isa::kAvx2: return Isa::kSse4;
    case Isa::kNeonI8mm: return Isa::kNeonDotprod;
    case Isa::kNeonDotprod: return Isa::kNeon;
    default: return Isa::kScalar;
  }
}

bool isa_available(Isa isa) {
  if (!compiled_in(isa)) return false;
  const auto& f = features();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kSse4: return f.sse4;
    case Isa::kAvx2: return f.avx2;
    case Isa::kAvx512: return f.avx512;
    case Isa::kAvx512Vnni: return f.avx512vnni;
    case Isa::kNeon: return f.neon;
    case Isa::kNeonDotprod: return f.dotprod;
    case Isa::kNeonI8mm: return f.i8mm;
  }
  return false;
}

Isa cpu_isa() {
  Isa best = Isa::kScalar;
  for (const auto& n : kNames) {
    if (isa_available(n.isa)) best = n.isa;  // kNames is in increasing order per family
  }
  return best;
}

Isa cap_isa(Isa best, std::optional<Isa> want) {
  if (!want || !isa_available(*want)) return best;
  // Only a level at or below `best` in the same family (or scalar) caps it.
  for (Isa i = best;; i = lower_isa(i)) {
    if (i == *want) return i;
    if (i == Isa::kScalar) break;
  }
  return best;
}

namespace {
std::atomic<bool> g_batch_invariant{false};
constexpr int kIsaUnset = -1;
std::atomic<int> g_isa{kIsaUnset};  // detect_isa(): an Isa, or kIsaUnset before the first call
}  // namespace

bool batch_invariant() { return g_batch_invariant.load(std::memory_order_relaxed); }

void enable_batch_invariant() { g_batch_invariant.store(true, std::memory_order_relaxed); }

Isa detect_isa() {
  int v = g_isa.load(std::memory_order_relaxed);
  if (v == kIsaUnset) {
    int unset = kIsaUnset;
    g_isa.compare_exchange_strong(unset, static_cast<int>(cpu_isa()), std::memory_order_relaxed);
    v = g_isa.load(std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

void set_isa_cap(std::optional<Isa> want) {
  g_isa.store(static_cast<int>(cap_isa(cpu_isa(), want)), std::memory_order_relaxed);
}

std::vector<Isa> available_isas() {
  std::vector<Isa> out;
  for (const auto& n : kNames) {
    if (isa_available(n.isa)) out.push_back(n.isa);
  }
  return out;
}

}  // namespace geniex::cpu
