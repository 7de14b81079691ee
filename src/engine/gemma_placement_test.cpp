// The real Gemma 3 270M placed on each unit against the CPU: logits over 256 tokens of real
// text (top-1 agreement and KL). OpenCL runs on PoCL here (the CPU through an OpenCL driver):
// agreement, not speed. Slow (tens of seconds): labelled slow and opencl.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/real_model.h"
#include "engine/placement_test_util.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

using namespace placement_test;  // NOLINT

std::vector<int32_t> text_tokens(const Model& m, size_t n) {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/tests/data/models/ppl_text.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = m.tokenize(ss.str(), true, false);
  EXPECT_TRUE(t.ok());
  std::vector<int32_t> out = t.ok() ? *t : std::vector<int32_t>{};
  if (out.size() > n) out.resize(n);
  EXPECT_EQ(out.size(), n);
  return out;
}

TEST(GemmaPlacement, EveryUnitAgreesWithTheCpuOn256TokensOfText) {
  const std::string path = testing_paths::real_model_path();
  Model cpu = load_on(path, Device::cpu());
  const auto toks = text_tokens(cpu, 256);
  auto ref = cpu.logits(toks);
  ASSERT_TRUE(ref.ok());
  const auto n_vocab = static_cast<size_t>(cpu.info().n_vocab);
  struct Case {
    const char* what;
    Device device;
    double min_top1, max_kl;
    const char* unit;  ///< must appear in the placement (no silent CPU fallback)
  };
  // Bounds. On 256 tokens of real text this 270M model amplifies rounding differences layer by
  // layer (activations are re-quantized to 8 bits before every matmul), so no two distinct
  // numerics agree to 0.99 top-1: measured on this machine, CPU (AVX2 kernels) vs CPU (AVX-512)
  // 0.945 / KL 6.3e-3, CPU (scalar) vs CPU (AVX-512) 0.926 / 6.4e-3, the exact double-precision
  // reference vs the CPU 0.930 / 6.3e-3 (src/backends/opencl/README.md). OpenCL must sit inside
  // that spread (measured 0.930 / 6.2e-3: every op matches the reference to ~1e-14 at Gemma's
  // shapes, opencl_gemma_shapes_test); the tiny models hold it to >= 0.99 (placement_gpu_test).
  // The reference NPU computes matmuls with int8 weights per channel and int8 activations per
  // token: its own, wider bound (measured: top-1 0.83, KL 0.041; greedy agreement with
  // llama.cpp in tests/python/test_placement_cli.py).
  for (const Case& c : {Case{"opencl", Device::gpu(), 0.90, 0.01, "whole model -> opencl("},
                        Case{"reference npu (int8)", Device::npu(), 0.80, 0.06, "-> npu(ref"}}) {
    SCOPED_TRACE(c.what);
    Model m = load_on(path, c.device);
    ASSERT_NE(m.info().placement.find(c.unit), std::string::npos) << m.info().placement;
    auto got = m.logits(toks);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const Agreement ag = compare(*ref, *got, n_vocab);
    std::printf(
        "[ measure ] Gemma 3 270M, %s (%s) vs CPU over 256 tokens of text: top-1 %.4f, "
        "KL %.2e\n",
        c.what, m.info().placement.c_str(), ag.top1, ag.kl);
    EXPECT_GE(ag.top1, c.min_top1);
    EXPECT_LE(ag.kl, c.max_kl);
  }
}

}  // namespace
}  // namespace geniex
