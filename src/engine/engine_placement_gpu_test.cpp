// The OpenCL backend through the public API (PoCL runs it on the CPU here, so the numbers are
// about agreement, never speed): logits of whole-GPU and mixed GPU/NPU/CPU placements against
// the CPU, and fallback when the GPU lacks an op or runs out of memory mid-run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "engine/placement_test_util.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

using namespace placement_test;  // NOLINT

// The model loaded on `d` and its logits' agreement with the CPU over 256 tokens.
struct Placed {
  Model model;
  Agreement ag;
};

Placed logits_vs_cpu(const std::string& path, Device d, std::vector<std::string>* log,
                     const OpenclTuning& opencl = {}) {
  Model cpu = load_on(path, Device::cpu());
  Placed p{load_on(path, d, log, {}, opencl), {}};
  const auto toks = some_tokens(256, cpu.info().n_vocab);
  auto a = cpu.logits(toks);
  auto b = p.model.logits(toks);
  EXPECT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  if (a.ok() && b.ok()) p.ag = compare(*a, *b, static_cast<size_t>(cpu.info().n_vocab));
  return p;
}

TEST(EnginePlacementGpu, WholeModelOnOpenclAgreesWithTheCpu) {
  for (const std::string arch : {"llama", "qwen2", "gemma3"}) {
    for (const std::string type : {"f32", "q8_0"}) {
      SCOPED_TRACE(arch + " " + type);
      std::vector<std::string> log;
      Placed r = logits_vs_cpu(tiny(arch, type), Device::gpu(), &log);
      Model* gpu = &r.model;
      const Agreement ag = r.ag;
      EXPECT_NE(gpu->info().placement.find("whole model -> opencl("), std::string::npos)
          << gpu->info().placement;
      // PoCL is a CPU driver: the load says so without a log.
      ASSERT_EQ(gpu->info().warnings.size(), 1u);
      EXPECT_NE(gpu->info().warnings[0].find("a CPU driver, not a GPU"), std::string::npos)
          << gpu->info().warnings[0];
      std::printf("[ measure ] %s %s: OpenCL vs CPU over 256 tokens: top-1 %.4f, KL %.2e\n",
                  arch.c_str(), type.c_str(), ag.top1, ag.kl);
      EXPECT_GE(ag.top1, 0.99);
      EXPECT_LE(ag.kl, 0.01);
    }
  }
}

TEST(EnginePlacementGpu, Lfm2ConvLayersRunOnOpencl) {
  // LFM2's short-conv layers (ShortConv / ShortConvState) run on the GPU with the attention
  // layers: one stage, logits as the CPU's over 256 tokens (prefill chunks carry the conv
  // states), and greedy decoding (one token per step through the states) the same tokens.
  for (const std::string type : {"f32", "q8_0"}) {
    SCOPED_TRACE(type);
    std::vector<std::string> log;
    Placed r = logits_vs_cpu(tiny("lfm2", type), Device::gpu(), &log);
    Model* gpu = &r.model;
    const std::string& p = gpu->info().placement;
    EXPECT_NE(p.find("whole model -> opencl("), std::string::npos) << p;
    const std::string ex = gpu->explain_placement();
    for (const char* op :
         {"ShortConv / F32 F32 F32 I32:  opencl(", "ShortConvState / F32 F32 I32:  opencl("}) {
      const size_t at = ex.find(op);
      ASSERT_NE(at, std::string::npos) << ex;
      EXPECT_EQ(ex.find('=', at + std::string(op).size()), ex.find(")=native", at) + 1) << ex;
    }
    // Both probes (decode and prefill) place every stage on the GPU.
    size_t on_gpu = 0;
    for (size_t at = 0;
         (at = ex.find("token step):\n  embedding .. output -> opencl(", at)) != std::string::npos;
         ++at) {
      ++on_gpu;
    }
    EXPECT_EQ(on_gpu, 2u) << ex;
    std::printf("[ measure ] lfm2 %s: OpenCL vs CPU over 256 tokens: top-1 %.4f, KL %.2e\n",
                type.c_str(), r.ag.top1, r.ag.kl);
    EXPECT_GE(r.ag.top1, 0.99);
    EXPECT_LE(r.ag.kl, 0.01);
    Model cpu = load_on(tiny("lfm2", type), Device::cpu());
    const auto toks = some_tokens(30, cpu.info().n_vocab);
    auto a = cpu.generate(std::span<const int32_t>(toks), greedy(12));
    auto b = gpu->generate(std::span<const int32_t>(toks), greedy(12));
    ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
    EXPECT_EQ(a->tokens, b->tokens);
    EXPECT_EQ(gpu->engine_stats().fallbacks, 0);
  }
}

TEST(EnginePlacementGpu, AGpuLackingAnOpKeepsTheOtherStagesAndTheLogSaysWhy) {
  // No Rope on the GPU: every layer moves to the CPU; embedding and output head stay on the GPU.
  OpenclTuning no_rope;
  no_rope.disabled_ops = {"Rope"};
  std::vector<std::string> log;
  Placed r = logits_vs_cpu(tiny("llama"), Device::gpu(), &log, no_rope);
  Model* gpu = &r.model;
  const Agreement ag = r.ag;
  const std::string& p = gpu->info().placement;
  EXPECT_NE(p.find("embedding -> opencl("), std::string::npos) << p;
  EXPECT_NE(p.find("layer 0 .. layer 2 -> cpu("), std::string::npos) << p;
  EXPECT_NE(p.find("output -> opencl("), std::string::npos) << p;
  EXPECT_NE(p.find("cannot run Rope"), std::string::npos) << p;
  EXPECT_NE(p.find("disabled by options"), std::string::npos) << p;
  EXPECT_GE(ag.top1, 0.99);
  EXPECT_LE(ag.kl, 0.01);
  bool copies = false;
  for (const auto& t : gpu->stage_timings()) copies = copies || t.bytes_in > 0;
  EXPECT_TRUE(copies) << "values crossed the GPU/CPU boundaries";
}

TEST(EnginePlacementGpu, AGpuOutOfMemoryMidRunFallsBackToTheCpu) {
  // 64 KiB of device memory: the tiny model's weights do not fit; the first run fails with
  // kResourceExhausted, the stages move to the CPU, and the answer equals the CPU's.
  OpenclTuning small;
  small.memory_limit_bytes = 65536;
  std::vector<std::string> log;
  Model gpu = load_on(tiny("qwen2"), Device::gpu(), &log, {}, small);
  Model cpu = load_on(tiny("qwen2"), Device::cpu());
  const auto toks = some_tokens(30, cpu.info().n_vocab);
  auto a = cpu.generate(std::span<const int32_t>(toks), greedy(12));
  auto b = gpu.generate(std::span<const int32_t>(toks), greedy(12));
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_GE(gpu.engine_stats().fallbacks, 1);
  const std::string all = joined(log);
  EXPECT_NE(all.find("moves off opencl("), std::string::npos) << all;
}

TEST(EnginePlacementGpu, BadKnobsAreClearErrors) {
  BackendTuning bad_op, bad_isa;
  bad_op.opencl.disabled_ops = {"Rope", "Teleport"};
  bad_isa.cpu.isa = "avx3000";
  for (const auto& [tuning, want] : {std::tuple{bad_op, "unknown op 'Teleport'"},
                                     std::tuple{bad_isa, "unknown SIMD level 'avx3000'"}}) {
    auto m = ModelBuilder(tiny("llama")).with_device(Device::gpu()).with_tuning(tuning).build();
    ASSERT_FALSE(m.ok()) << want;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(want), std::string::npos) << m.status().message();
  }
}

TEST(EnginePlacementGpu, NpuGpuAndCpuTogether) {
  // Pinned NPU with an OpenCL device allowed (the filter admits PoCL's CPU device): the NPU has
  // no Embedding, so the embedding runs on the GPU and the layers and head on the NPU.
  OpenclTuning pocl_cpu;
  pocl_cpu.device_filter = "pthread";
  std::vector<std::string> log;
  Placed r = logits_vs_cpu(tiny("gemma3"), Device::npu(), &log, pocl_cpu);
  Model* mixed = &r.model;
  const Agreement ag = r.ag;
  const std::string& p = mixed->info().placement;
  EXPECT_NE(p.find("embedding -> opencl("), std::string::npos) << p;
  EXPECT_NE(p.find("-> npu(ref"), std::string::npos) << p;
  std::printf(
      "[ measure ] gemma3 tiny, embedding on OpenCL + layers on the reference NPU vs "
      "CPU: top-1 %.4f, KL %.2e\n",
      ag.top1, ag.kl);
  EXPECT_GE(ag.top1, 0.95);
  EXPECT_LE(ag.kl, 0.01);
}

}  // namespace
}  // namespace geniex
