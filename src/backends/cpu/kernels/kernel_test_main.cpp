// main() of the CPU kernel test binaries: the flags of kernel_test_flags.h, then every test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/cpu/kernels/kernel_test_flags.h"

namespace geniex::cpu::testing {
namespace {
std::optional<Isa> g_expected, g_requested;
}  // namespace

std::optional<Isa> expected_isa() { return g_expected; }
std::optional<Isa> requested_isa() { return g_requested; }

}  // namespace geniex::cpu::testing

namespace {

// The level named by `arg` after `prefix`, or exit 2 naming the bad value.
geniex::cpu::Isa level(std::string_view arg, std::string_view prefix) {
  const auto isa = geniex::cpu::parse_isa(arg.substr(prefix.size()));
  if (!isa) {
    std::fprintf(stderr, "unknown SIMD level in %s\n", std::string(arg).c_str());
    std::exit(2);
  }
  return *isa;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes the --gtest_* flags
  namespace cpu = geniex::cpu;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.rfind("--isa=", 0) == 0) {
      cpu::testing::g_requested = level(a, "--isa=");
      cpu::set_isa_cap(cpu::testing::g_requested);
    } else if (a.rfind("--expect-isa=", 0) == 0) {
      cpu::testing::g_expected = level(a, "--expect-isa=");
    } else if (a == "--batch-invariant") {
      cpu::enable_batch_invariant();
    } else if (a.rfind("--gemv-streams=", 0) == 0) {
      cpu::set_gemv_streams(std::atoi(argv[i] + std::string_view("--gemv-streams=").size()));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  return RUN_ALL_TESTS();
}
