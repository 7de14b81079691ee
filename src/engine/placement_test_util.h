// Shared by the placement tests: tiny model paths, token streams, loading on a device with the
// build's plugins folder, and the agreement of two logit matrices (top-1, KL).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "geniex/geniex.hpp"

namespace geniex::placement_test {

// The source tree (GENIEX_SOURCE_DIR, else ".").
inline std::string source_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root != nullptr ? root : ".";
}

inline std::string tiny(const std::string& arch, const std::string& type = "f32") {
  return source_dir() + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

inline std::vector<int32_t> some_tokens(int n, int32_t n_vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13) % n_vocab));
  return t;
}

inline GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

// Top-1 agreement and mean KL(cpu || other) over the rows of two logit matrices.
struct Agreement {
  double top1 = 0.0;
  double kl = 0.0;
};
inline Agreement compare(const std::vector<float>& cpu, const std::vector<float>& other,
                         size_t n_vocab) {
  Agreement a;
  const size_t rows = cpu.size() / n_vocab;
  for (size_t r = 0; r < rows; ++r) {
    const float* p = cpu.data() + r * n_vocab;
    const float* q = other.data() + r * n_vocab;
    size_t ap = 0, aq = 0;
    double mp = p[0], mq = q[0];
    for (size_t i = 0; i < n_vocab; ++i) {
      if (p[i] > p[ap]) ap = i;
      if (q[i] > q[aq]) aq = i;
      mp = std::max(mp, double{p[i]});
      mq = std::max(mq, double{q[i]});
    }
    a.top1 += ap == aq ? 1.0 : 0.0;
    double zp = 0, zq = 0;
    for (size_t i = 0; i < n_vocab; ++i) {
      zp += std::exp(p[i] - mp);
      zq += std::exp(q[i] - mq);
    }
    double kl = 0;
    for (size_t i = 0; i < n_vocab; ++i) {
      const double lp = p[i] - mp - std::log(zp), lq = q[i] - mq - std::log(zq);
      kl += std::exp(lp) * (lp - lq);
    }
    a.kl += kl;
  }
  a.top1 /= static_cast<double>(rows);
  a.kl /= static_cast<double>(rows);
  return a;
}

inline Model load_on(const std::string& path, Device d, std::vector<std::string>* log = nullptr,
                     const std::string& npu_config = {}, const OpenclTuning& opencl = {}) {
  ModelBuilder b(path);
  b.with_device(d).with_threads(2).with_context_size(512).with_plugin_dir(GENIEX_TEST_PLUGIN_DIR);
  b.with_npu_config(npu_config);
  BackendTuning tuning;
  tuning.opencl = opencl;
  b.with_tuning(tuning);
  if (log != nullptr) b.with_log([log](std::string_view l) { log->emplace_back(l); });
  auto m = b.build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// Greedy decode of `n` tokens on `unit` after `prompt`: each token must be the argmax of `cpu`'s
// logits for the same sequence, up to `tol` (a unit rounding differently may pick a near-tie).
inline void expect_greedy_is_cpu_argmax(Model& unit, Model& cpu, const std::vector<int32_t>& prompt,
                                        int n, double tol, const std::string& label) {
  const auto n_vocab = static_cast<size_t>(unit.info().n_vocab);
  auto gen = unit.generate(std::span<const int32_t>(prompt), greedy(n));
  ASSERT_TRUE(gen.ok()) << label << ": " << gen.status().to_string();
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
  auto full = cpu.logits(std::span<const int32_t>(all).first(all.size() - 1));
  ASSERT_TRUE(full.ok()) << label << ": " << full.status().to_string();
  for (size_t s = 0; s < gen->tokens.size(); ++s) {
    const float* row = full->data() + (prompt.size() - 1 + s) * n_vocab;
    const float best = *std::max_element(row, row + n_vocab);
    EXPECT_LE(best - row[gen->tokens[s]], tol) << label << " step " << s;
  }
}

}  // namespace geniex::placement_test
