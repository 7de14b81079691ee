// Sampler::sample does not allocate after create(): global operator new is counted while the
// counter is armed. Skipped under sanitizers, which own operator new.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "engine/sampling/rng.h"
#include "engine/sampling/sampler.h"

#if defined(__SANITIZE_ADDRESS__)
#define GENIEX_SAMPLING_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GENIEX_SAMPLING_SANITIZED 1
#endif
#endif

#ifndef GENIEX_SAMPLING_SANITIZED
#if defined(__GNUC__) && !defined(__clang__)
// The replacement pair below is malloc/free based, which GCC cannot see through.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
std::atomic<bool> g_armed{false};
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_armed.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace geniex::sampling {
namespace {

TEST(SamplerAlloc, SampleDoesNotAllocate) {
#ifdef GENIEX_SAMPLING_SANITIZED
  GTEST_SKIP() << "operator new is the sanitizer's";
#else
  constexpr int32_t kVocab = 32000;
  Pcg32 rng(1);
  std::vector<float> logits(kVocab);
  for (float& x : logits) x = static_cast<float>(rng.next_unit_double() * 10.0);
  std::vector<int32_t> history;
  for (int i = 0; i < 64; ++i) history.push_back(static_cast<int32_t>(rng.next_below(kVocab)));

  SamplingParams variants[4];
  variants[1].top_k = 0;  // top-p + min-p over the whole vocabulary
  variants[2].top_k = 0;
  variants[2].min_p = 0.0f;  // growing partial sort
  variants[3].temperature = 0.0f;
  for (SamplingParams& p : variants) {
    p.repetition_penalty = 1.1f;
    p.frequency_penalty = 0.1f;
    auto s = Sampler::create(p, kVocab);
    ASSERT_TRUE(s.ok());
    g_allocations = 0;
    g_armed = true;
    int32_t sum = 0;
    for (int i = 0; i < 20; ++i) {
      auto t = s->sample(logits, history);
      sum += t.ok() ? *t : -1;
    }
    g_armed = false;
    EXPECT_EQ(g_allocations.load(), 0);
    EXPECT_GE(sum, 0);
  }
#endif
}

}  // namespace
}  // namespace geniex::sampling
