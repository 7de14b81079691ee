// ModelBuilder::with_deterministic: the builder option (not an environment variable) turns on
// the batch-invariant CPU kernels, and then a token's logits are the same bits whether its row
// is computed alone (the GEMV path) or in a batch (the GEMM tiles). Its own binary: the kernels'
// mode is process-wide and only ever switches on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/kernels/isa.h"
#include "geniex/geniex.hpp"

namespace geniex {
namespace {

std::string tiny_q8_0() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models/tiny-llama-q8_0.gguf";
}

Model load(bool deterministic) {
  auto m = ModelBuilder(tiny_q8_0())
               .with_device(Device::cpu())
               .with_threads(2)
               .with_context_size(128)
               .with_deterministic(deterministic)
               .build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

TEST(Deterministic, TheBuilderOptionTurnsOnBatchInvariantKernels) {
  ASSERT_FALSE(cpu::batch_invariant());
  { Model plain = load(false); }
  EXPECT_FALSE(cpu::batch_invariant()) << "a model without the option leaves the kernels alone";

  Model m = load(true);
  EXPECT_TRUE(cpu::batch_invariant());
  const std::vector<int32_t> batch = {2032, 791, 4062 % 2032, 1101, 17, 505, 9, 1500};
  auto together = m.logits(batch);
  ASSERT_TRUE(together.ok()) << together.status().to_string();
  auto alone = m.logits(std::vector<int32_t>{batch[0]});  // one row: the single-row kernels
  ASSERT_TRUE(alone.ok()) << alone.status().to_string();
  const size_t v = static_cast<size_t>(m.info().n_vocab);
  ASSERT_EQ(alone->size(), v);
  for (size_t i = 0; i < v; ++i) {
    ASSERT_EQ((*alone)[i], (*together)[i]) << "logit " << i << " of the first position";
  }
}

}  // namespace
}  // namespace geniex
