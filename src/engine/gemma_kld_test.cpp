// The real Gemma 3 270M Q4_K_M against llama.cpp's default settings, inside llama.cpp's own
// noise: KL divergence over the compact golden tests/data/eval/gemma3_270m_kld_golden.json
// (scripts/goldens/make_gemma_kld_golden.py: llama.cpp's top-32 log-probabilities at 510 scored
// positions of two 512-token chunks, and its own -ub 8 vs default divergence on the same
// positions and support — "the floor").
//
// The divergence is computed over the golden's support: each of its 32 ids plus one bin for
// the rest of the mass, for ours exactly as the script computed it for llama.cpp's floor. The
// check fails where the default CPU path drifts above that floor by more than the estimate's
// own spread allows (bench/fidelity.py gives the whole-vocabulary table). Once per kernel level
// (CpuTuning::isa: the CPU's best, and on x86 the AVX2 and SSE4 levels where the CPU has them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/cpu/kernels/isa.h"
#include "common/real_model.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

nlohmann::json golden(const std::string& suffix = "") {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/tests/data/eval/gemma3_270m_kld_golden" +
                   suffix + ".json");
  EXPECT_TRUE(in.good()) << suffix;
  return nlohmann::json::parse(in);
}

struct Divergence {
  double mean_kld = 0;
  double se_kld = 0;  // standard error of the mean
  double same_top = 0;
  int64_t n = 0;
};

// KL(base || ours) over bins {ids} + {rest}, per position, from our full logits row.
double support_kld(const float* logits, size_t n_vocab, const std::vector<int32_t>& ids,
                   const std::vector<double>& base_lp) {
  float max_logit = logits[0];
  for (size_t i = 1; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0;
  for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  const double lse = max_logit + std::log(sum);
  double kld = 0, pb_sum = 0, pq_sum = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const double pb = std::exp(base_lp[k]);
    const double lq = logits[static_cast<size_t>(ids[k])] - lse;
    kld += pb * (base_lp[k] - lq);
    pb_sum += pb;
    pq_sum += std::exp(lq);
  }
  const double rb = std::max(1e-12, 1 - pb_sum), rq = std::max(1e-12, 1 - pq_sum);
  return kld + rb * (std::log(rb) - std::log(rq));
}

Divergence measure(Model& model, const nlohmann::json& g) {
  const auto n_ctx = g.at("n_ctx").get<int32_t>();
  const auto n_vocab = static_cast<size_t>(g.at("n_vocab").get<int32_t>());
  const auto& positions = g.at("positions");
  Divergence d;
  double sum = 0, sum2 = 0;
  int64_t same = 0;
  size_t p = 0;
  const auto n_chunks = static_cast<int32_t>(g.at("chunks").size());
  for (int32_t c = 0; c < n_chunks; ++c) {
    auto toks = g.at("chunks")[static_cast<size_t>(c)].get<std::vector<int32_t>>();
    if (model.info().add_bos) toks[0] = model.info().bos_token;  // as llama-perplexity does
    const int32_t first = n_ctx / 2;
    auto logits = model.logits(toks, first);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    if (!logits.ok()) return d;
    for (; p < positions.size() && positions[p].at("chunk").get<int32_t>() == c; ++p) {
      const auto& pos = positions[p];
      const auto row = static_cast<size_t>(pos.at("pos").get<int32_t>() - first);
      const float* l = logits->data() + row * n_vocab;
      const auto ids = pos.at("ids").get<std::vector<int32_t>>();
      const auto lp = pos.at("logprobs").get<std::vector<double>>();
      const double k = support_kld(l, n_vocab, ids, lp);
      sum += k;
      sum2 += k * k;
      same += (std::max_element(l, l + n_vocab) - l) == ids[0];
      ++d.n;
    }
  }
  d.mean_kld = sum / static_cast<double>(d.n);
  const double var = sum2 / static_cast<double>(d.n) - d.mean_kld * d.mean_kld;
  d.se_kld = std::sqrt(std::max(0.0, var) / static_cast<double>(d.n - 1));
  d.same_top = static_cast<double>(same) / static_cast<double>(d.n);
  return d;
}

class GemmaKld : public ::testing::TestWithParam<const char*> {};

TEST_P(GemmaKld, DefaultCpuPathIsInsideLlamaCppNoise) {
  BackendTuning tuning;
  tuning.cpu.isa = GetParam();  // "": the best this CPU runs
  if (!tuning.cpu.isa.empty() && !cpu::isa_available(*cpu::parse_isa(tuning.cpu.isa))) {
    GTEST_SKIP() << tuning.cpu.isa << " is not available on this CPU";
  }
  const auto g = golden();
  auto model = ModelBuilder(testing_paths::real_model_path())
                   .with_device(Device::cpu())
                   .with_context_size(g.at("n_ctx").get<int32_t>())
                   .with_threads(2)
                   .with_tuning(tuning)
                   .build();
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  ASSERT_EQ(model->info().n_vocab, g.at("n_vocab").get<int32_t>());
  const Divergence d = measure(*model, g);
  ASSERT_EQ(d.n, static_cast<int64_t>(g.at("positions").size()));
  const auto& floor = g.at("floor");
  const double floor_kld = floor.at("support_kld").get<double>();
  const double floor_top = floor.at("same_top").get<double>();
  std::printf(
      "GenieX vs llama.cpp (support KLD over top-%d + rest, %lld positions): %.6f ± %.6f, "
      "same top %.2f %%; llama.cpp's floor (-ub 8 vs default): %.6f, %.2f %%\n",
      g.at("top_k").get<int>(), static_cast<long long>(d.n), d.mean_kld, d.se_kld, 100 * d.same_top,
      floor_kld, 100 * floor_top);
  // Inside the floor up to two standard errors of our own estimate (the floor's is alike): a
  // kernel that moves the model off llama.cpp's numerics shows as a multiple of it.
  EXPECT_LE(d.mean_kld, floor_kld + 2 * d.se_kld);
  // Same-top: a binomial over 510 positions has a standard error of ~1 point.
  EXPECT_GE(d.same_top, floor_top - 0.02);
}

// Quantized KV caches (tests/data/eval/gemma3_270m_kld_golden_{q8_0,q4_0}.json: llama.cpp with
// the same cache type, flash attention on). There llama.cpp's -ub 8 path gives the same bits, so
// the bar is what the cache type costs llama.cpp itself ("cost": its quantized run against its
// own f16 one, same positions). A quantized cache amplifies any difference upstream of it: our
// own AVX-512 and scalar kernels, which differ only in float summation order, end 0.118 apart in
// KLD with q4_0 caches (0.0075 with q8_0; bench/fidelity.py, full vocabulary) against 0.0058
// with f16. Measured (2026-12-04, 8 chunks, full vocabulary): ours vs llama.cpp's q4_0 0.129
// (0.201 before we rotated K/V by the Walsh-Hadamard blocks llama.cpp uses), its q4_0 vs its f16
// 0.106; q8_0 0.0089 vs 0.0080. So: ours within 1.5x the cost of llama.cpp's own cache from
// llama.cpp's quantized run (the unrotated cache was ~2x), and ours no further from llama.cpp's
// f16 run than 1.25x what the cache costs llama.cpp.
class GemmaKvKld : public ::testing::TestWithParam<KvCacheType> {};

TEST_P(GemmaKvKld, QuantizedCacheIsAsCloseAsLlamaCppOwn) {
  const bool q4 = GetParam() == KvCacheType::kQ4_0;
  const auto g = golden(q4 ? "_q4_0" : "_q8_0");
  const auto g16 = golden();
  auto model = ModelBuilder(testing_paths::real_model_path())
                   .with_device(Device::cpu())
                   .with_context_size(g.at("n_ctx").get<int32_t>())
                   .with_threads(2)
                   .with_kv_cache_type(GetParam())
                   .build();
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Divergence vs_q = measure(*model, g);
  const Divergence vs_f16 = measure(*model, g16);
  ASSERT_EQ(vs_q.n, static_cast<int64_t>(g.at("positions").size()));
  ASSERT_EQ(vs_f16.n, vs_q.n);
  const auto& cost = g.at("cost");
  const double cost_q = cost.at("support_kld_f16_vs_this").get<double>();
  const double cost_f16 = cost.at("support_kld_vs_f16").get<double>();
  std::printf(
      "%s cache, support KLD over top-%d + rest, %lld positions: ours vs llama.cpp's %s run "
      "%.6f ± %.6f (its f16 run: %.6f); ours vs llama.cpp's f16 run %.6f ± %.6f (its %s run: "
      "%.6f)\n",
      g.at("kv_type").get<std::string>().c_str(), g.at("top_k").get<int>(),
      static_cast<long long>(vs_q.n), g.at("kv_type").get<std::string>().c_str(), vs_q.mean_kld,
      vs_q.se_kld, cost_q, vs_f16.mean_kld, vs_f16.se_kld,
      g.at("kv_type").get<std::string>().c_str(), cost_f16);
  EXPECT_LE(vs_q.mean_kld, 1.5 * cost_q + 2 * vs_q.se_kld);
  EXPECT_LE(vs_f16.mean_kld, 1.25 * cost_f16 + 2 * vs_f16.se_kld);
}

INSTANTIATE_TEST_SUITE_P(Kv, GemmaKvKld, ::testing::Values(KvCacheType::kQ8_0, KvCacheType::kQ4_0),
                         [](const auto& p) {
                           return std::string(p.param == KvCacheType::kQ4_0 ? "q4_0" : "q8_0");
                         });

#if defined(__x86_64__)
INSTANTIATE_TEST_SUITE_P(Isa, GemmaKld, ::testing::Values("", "avx2", "sse4"),
                         [](const auto& param_info) {
                           return std::string(param_info.param[0] ? param_info.param : "best");
                         });
#else
INSTANTIATE_TEST_SUITE_P(Isa, GemmaKld, ::testing::Values(""),
                         [](const auto&) { return std::string("best"); });
#endif

}  // namespace
}  // namespace geniex
