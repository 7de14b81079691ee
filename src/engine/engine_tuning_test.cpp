// BackendTuning through the public API: parse_cpu_tuning's text form, and CpuTuning reaching the
// CPU kernels (the level cap is process-wide: each build sets it, the default included).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string tiny_q8_0() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-llama-q8_0.gguf";
}

TEST(CpuTuningText, ParsesEveryKeyAndRejectsTheRest) {
  auto t = parse_cpu_tuning("isa=sse4,repack=none,huge_pages=0,prefetch=0,streams=3");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->isa, "sse4");
  EXPECT_EQ(t->repack, CpuTuning::Repack::kNone);
  EXPECT_FALSE(t->huge_pages);
  EXPECT_EQ(t->gemv_prefetch_bytes, 0);
  EXPECT_EQ(t->gemv_streams, 3);
  auto d = parse_cpu_tuning("");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->isa.empty());
  EXPECT_EQ(d->repack, CpuTuning::Repack::kDefault);
  EXPECT_TRUE(d->huge_pages);
  for (const char* bad :
       {"bogus=1", "repack=some", "streams=5", "prefetch=-4", "huge_pages=2", "isa"}) {
    const auto r = parse_cpu_tuning(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

Model load(const BackendTuning& tuning) {
  auto m = ModelBuilder(tiny_q8_0())
               .with_device(Device::cpu())
               .with_threads(2)
               .with_context_size(128)
               .with_tuning(tuning)
               .build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

TEST(CpuTuningApi, TheBuilderSetsTheKernelsLevelAndGemvKnobs) {
  BackendTuning scalar;
  scalar.cpu.isa = "scalar";
  scalar.cpu.gemv_streams = 3;
  scalar.cpu.gemv_prefetch_bytes = 0;
  {
    Model m = load(scalar);
    EXPECT_EQ(cpu::detect_isa(), cpu::Isa::kScalar);
    EXPECT_NE(m.info().placement.find("cpu(scalar"), std::string::npos) << m.info().placement;
    EXPECT_EQ(cpu::gemv_streams(), 3);
    EXPECT_EQ(cpu::gemv_prefetch_bytes(), 0u);
    auto logits = m.logits(std::vector<int32_t>{1, 2, 3});
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  }
  // A build with the defaults sets the defaults again.
  Model m = load(BackendTuning{});
  EXPECT_EQ(cpu::detect_isa(), cpu::cpu_isa());
  EXPECT_EQ(cpu::gemv_streams(), cpu::default_gemv_streams());
  EXPECT_EQ(cpu::gemv_prefetch_bytes(), cpu::default_gemv_prefetch_bytes());
}

}  // namespace
}  // namespace geniex
