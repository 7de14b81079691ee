// LFM2 (hybrid short-conv + attention) through the public API on the tiny model: logits against
// Hugging Face in one step, in prefill chunks and one token at a time (the conv state carried
// between steps, against HF's own cached decode), greedy decode against one pass, prefix reuse
// (whole cached sequences, and block boundaries through the per-block state snapshots: same
// slot, prefix cache, images), state files and the context shift (tests/data/models/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "geniex/geniex.hpp"
#include "models/npy.h"

namespace geniex {
namespace {

std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/models";
}

std::string tiny_lfm2(const std::string& type = "f32") {
  return data_dir() + "/tiny-lfm2-" + type + ".gguf";
}

Model load(int32_t n_batch, int32_t n_ctx = 512) {
  ModelBuilder b(tiny_lfm2());
  b.with_context_size(n_ctx).with_batch_size(n_batch).with_kv_cache_type(KvCacheType::kF32);
  auto m = b.with_device(Device::cpu()).with_threads(2).build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    std::ifstream in(data_dir() + "/tiny_models.json");
    EXPECT_TRUE(in.good());
    return nlohmann::json::parse(in).at("models").at("lfm2");
  }();
  return j;
}

std::vector<int32_t> golden_ids() { return golden().at("ids").get<std::vector<int32_t>>(); }

std::vector<int32_t> some_tokens(int n, int32_t n_vocab, int32_t salt = 0) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 7919 + 13 + salt) % n_vocab));
  return t;
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

size_t argmax(const float* row, size_t n) {
  return static_cast<size_t>(std::max_element(row, row + n) - row);
}

// HF's full-pass logits (64 positions) and its cached decode (prefill 5, then 1 token at a time)
// against ours with the whole prompt in one step, in chunks of 5 (the state crosses chunk
// boundaries) and in steps of 2 (= L - 1: each step's state is entirely the previous step's).
TEST(EngineLfm2, LogitsMatchTransformersInOneStepInChunksAndTokenByToken) {
  auto full = models::read_npy(data_dir() + "/tiny-lfm2.logits.npy");
  auto dec = models::read_npy(data_dir() + "/tiny-lfm2.decode.logits.npy");
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  ASSERT_TRUE(dec.ok()) << dec.status().to_string();
  const auto ids = golden_ids();
  const auto k = golden().at("decode_prefill").get<size_t>();
  const auto end = golden().at("decode_end").get<size_t>();
  const auto n_vocab = static_cast<size_t>(full->shape[1]);
  ASSERT_EQ(dec->shape, (std::vector<int64_t>{static_cast<int64_t>(end - k + 1),
                                              static_cast<int64_t>(n_vocab)}));
  for (const int32_t n_batch : {512, 5, 1}) {
    Model m = load(n_batch);
    auto got = m.logits(std::span<const int32_t>(ids));
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const int64_t steps = m.engine_stats().steps;
    // (A logits request runs at least two rows per step; the engine counts its last step just
    // after the request finished, so the count may lag by one.)
    EXPECT_GE(steps, static_cast<int64_t>(ids.size()) / std::max(n_batch, 2) - 1);
    ASSERT_EQ(got->size(), full->data.size());
    const double err_full = max_abs_diff(got->data(), full->data.data(), got->size());
    // Rows k-1 .. end-1: HF computed them through its conv cache.
    const double err_dec =
        max_abs_diff(got->data() + (k - 1) * n_vocab, dec->data.data(), dec->data.size());
    std::printf(
        "[lfm2] n_batch %3d (%lld steps): max |d| vs HF full %.3g, vs HF cached decode %.3g\n",
        n_batch, static_cast<long long>(steps), err_full, err_dec);
    EXPECT_LE(err_full, 1e-4) << "n_batch " << n_batch;
    EXPECT_LE(err_dec, 1e-4) << "n_batch " << n_batch;
    for (size_t p = 0; p < ids.size(); ++p) {
      ASSERT_EQ(argmax(got->data() + p * n_vocab, n_vocab),
                argmax(full->data.data() + p * n_vocab, n_vocab))
          << "n_batch " << n_batch << " pos " << p;
    }
  }
}

// Greedy decoding (prefill, then one token per step with the conv state) follows the argmax of
// one pass over the whole sequence, and its logits match that pass.
TEST(EngineLfm2, GreedyDecodeFollowsOnePass) {
  Model m = load(512);
  const auto prompt = some_tokens(7, m.info().n_vocab);
  auto g = m.generate(std::span<const int32_t>(prompt), greedy(40));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  std::vector<int32_t> all = g->prompt_tokens;
  all.insert(all.end(), g->tokens.begin(), g->tokens.end());
  Model fresh = load(512);
  auto ref = fresh.logits(std::span<const int32_t>(all));
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const auto n_vocab = static_cast<size_t>(m.info().n_vocab);
  for (size_t t = prompt.size() - 1; t + 1 < all.size(); ++t) {
    ASSERT_EQ(all[t + 1], static_cast<int32_t>(argmax(ref->data() + t * n_vocab, n_vocab)))
        << "step " << t;
  }
}

// A second request that shares a prefix with the cached context (same start, then different
// tokens) must not see the first request's conv state: the manager resumes only at a block
// boundary with a state snapshot (none inside 20 tokens: recompute), or where the whole cached
// sequence is a prefix. A continuation of the whole context reuses it and stays exact.
TEST(EngineLfm2, PrefixReuseNeverReusesAStaleState) {
  Model m = load(512);
  const int32_t nv = m.info().n_vocab;
  const auto p1 = some_tokens(30, nv);
  auto g1 = m.generate(std::span<const int32_t>(p1), greedy(5));
  ASSERT_TRUE(g1.ok());
  auto p2 = p1;  // same 20 tokens, then others
  p2.resize(20);
  for (int32_t t : some_tokens(12, nv, 977)) p2.push_back(t);
  auto g2 = m.generate(std::span<const int32_t>(p2), greedy(12));
  Model fresh = load(512);
  auto f2 = fresh.generate(std::span<const int32_t>(p2), greedy(12));
  ASSERT_TRUE(g2.ok() && f2.ok());
  EXPECT_EQ(g2->tokens, f2->tokens);
  EXPECT_EQ(g2->timings.cached_tokens, 0);  // no block boundary (32) inside the 20 shared

  // Continue the whole cached context (a chat turn): reused, and the logits stay exact.
  std::vector<int32_t> p3 = m.cached_tokens();
  for (int32_t t : some_tokens(6, nv, 31)) p3.push_back(t);
  auto g3 = m.generate(std::span<const int32_t>(p3), greedy(12));
  ASSERT_TRUE(g3.ok());
  EXPECT_GT(g3->timings.cached_tokens, 0);
  fresh.reset();
  auto f3 = fresh.generate(std::span<const int32_t>(p3), greedy(12));
  ASSERT_TRUE(f3.ok());
  EXPECT_EQ(g3->tokens, f3->tokens);
}

// save_state / load_state carry the conv states: the restored model continues exactly like the
// original, and unlike a model that only has the tokens.
TEST(EngineLfm2, StateFileRoundTripsTheConvState) {
  const std::string path = ::testing::TempDir() + "/engine_lfm2_state.gxkv";
  Model a = load(512);
  const int32_t nv = a.info().n_vocab;
  const auto prompt = some_tokens(40, nv);
  auto g1 = a.generate(std::span<const int32_t>(prompt), greedy(10));
  ASSERT_TRUE(g1.ok());
  ASSERT_TRUE(a.save_state(path).ok());
  std::vector<int32_t> turn2 = a.cached_tokens();
  const size_t cached = turn2.size();
  for (int32_t t : some_tokens(5, nv, 55)) turn2.push_back(t);
  auto cont_a = a.generate(std::span<const int32_t>(turn2), greedy(15));
  ASSERT_TRUE(cont_a.ok());

  Model b = load(512);
  Status s = b.load_state(path);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(b.cached_tokens().size(), cached);
  auto cont_b = b.generate(std::span<const int32_t>(turn2), greedy(15));
  ASSERT_TRUE(cont_b.ok());
  EXPECT_EQ(cont_b->timings.cached_tokens, static_cast<int32_t>(cached));
  EXPECT_EQ(cont_a->tokens, cont_b->tokens);
  // And it is the greedy path of one pass over the whole sequence (a zero or stale restored
  // state would leave it).
  std::vector<int32_t> all = turn2;
  all.insert(all.end(), cont_b->tokens.begin(), cont_b->tokens.end());
  Model c = load(512);
  auto ref = c.logits(std::span<const int32_t>(all));
  ASSERT_TRUE(ref.ok());
  const auto n_vocab = static_cast<size_t>(nv);
  for (size_t t = turn2.size() - 1; t + 1 < all.size(); ++t) {
    ASSERT_EQ(all[t + 1], static_cast<int32_t>(argmax(ref->data() + t * n_vocab, n_vocab)))
        << "step " << t;
  }
  std::remove(path.c_str());
}

// The context shift keeps the conv states (position-free) and re-rotates the attention layers'
// K: generation goes on far past the context, deterministically, keeping the first n_keep.
TEST(EngineLfm2, ContextShiftKeepsGoingPastTheContext) {
  auto shifting = [] {
    ModelBuilder b(tiny_lfm2());
    b.with_context_size(64).with_kv_cache_type(KvCacheType::kF32);
    b.with_context_overflow(ContextOverflow::kShift, 4);
    auto m = b.with_device(Device::cpu()).with_threads(2).build();
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return std::move(*m);
  };
  Model m = shifting();
  const auto prompt = some_tokens(20, m.info().n_vocab);
  auto g = m.generate(std::span<const int32_t>(prompt), greedy(150));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->tokens.size(), 150u);
  EXPECT_EQ(g->stop_reason, StopReason::kMaxTokens);
  const auto kept = m.cached_tokens();
  ASSERT_LE(kept.size(), 64u);
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.begin() + 4, kept.begin()));
  EXPECT_TRUE(std::equal(kept.end() - 10, kept.end(), g->tokens.end() - 11));
  Model m2 = shifting();
  auto g2 = m2.generate(std::span<const int32_t>(prompt), greedy(150));
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g->tokens, g2->tokens);
  // Up to the first shift the run is an ordinary decode: the tokens before the context filled
  // are the one-pass greedy path.
  Model fresh = load(512);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), g->tokens.begin(), g->tokens.begin() + 40);
  auto ref = fresh.logits(std::span<const int32_t>(all));
  ASSERT_TRUE(ref.ok());
  const auto n_vocab = static_cast<size_t>(m.info().n_vocab);
  for (size_t t = prompt.size() - 1; t + 1 < all.size(); ++t) {
    ASSERT_EQ(all[t + 1], static_cast<int32_t>(argmax(ref->data() + t * n_vocab, n_vocab)))
        << "step " << t;
  }
}

TEST(EngineLfm2, ModelInfoAndQuantizedFilesLoad) {
  for (const char* type : {"f16", "q8_0"}) {
    ModelBuilder b(tiny_lfm2(type));
    auto m = b.with_device(Device::cpu()).with_threads(2).with_context_size(128).build();
    ASSERT_TRUE(m.ok()) << type << ": " << m.status().to_string();
    auto g = m->generate(std::span<const int32_t>(golden_ids()).first(10), greedy(4));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_EQ(g->tokens.size(), 4u);
  }
}

// ---------------------------------------------------------------------------------------------
// Reuse at block boundaries: every full block of a sequence keeps the conv states after its
// last token, so a prompt that shares only part of the cached tokens resumes at the last block
// boundary inside the shared part (32-token blocks) instead of recomputing from 0.

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

GenerationConfig greedy_lp(int n) {
  GenerationConfig c = greedy(n);
  c.logprobs = 3;
  return c;
}

// Same tokens, and log-probabilities of every generated token (chosen and top 3) within tol.
void expect_same_generation(const Generation& got, const Generation& want, const char* what,
                            double tol = 1e-4) {
  ASSERT_EQ(got.tokens, want.tokens) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  double worst = 0.0;
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    const auto& a = got.logprobs[i];
    const auto& b = want.logprobs[i];
    worst = std::max(worst, std::fabs(static_cast<double>(a.chosen.logprob) - b.chosen.logprob));
    ASSERT_EQ(a.top.size(), b.top.size());
    for (size_t j = 0; j < a.top.size(); ++j) {
      EXPECT_EQ(a.top[j].token, b.top[j].token) << what << " token " << i;
      worst = std::max(worst, std::fabs(static_cast<double>(a.top[j].logprob) - b.top[j].logprob));
    }
  }
  std::printf("[lfm2 snapshots] %s: %zu tokens equal, max |d logprob| %.3g\n", what,
              got.tokens.size(), worst);
  EXPECT_LE(worst, tol) << what;
}

// P1 = A + B, then P2 = A + C (A: 75 tokens, two whole blocks and a part): the second call
// resumes at 64 with the states of block 1's snapshot and generates what a fresh model does,
// whether the snapshots came from one prefill step, from prefill chunks of 5 (boundaries inside
// chunks) or from decode steps (a block filled by generated tokens).
TEST(EngineLfm2, SameSlotReuseResumesAtTheLastBlockBoundary) {
  for (const int32_t n_batch : {512, 5}) {
    Model m = load(n_batch);
    const int32_t nv = m.info().n_vocab;
    const auto a = some_tokens(75, nv);
    const auto p1 = cat(a, some_tokens(20, nv, 977));
    const auto p2 = cat(a, some_tokens(15, nv, 31));
    auto g1 = m.generate(std::span<const int32_t>(p1), greedy(5));
    ASSERT_TRUE(g1.ok()) << g1.status().to_string();
    // 95 prompt + 4 fed generated tokens: blocks 0..2 are full (block 2's end, cell 95, is the
    // first generated token, written by a decode step), each with 10 tiny conv layers' states.
    const KvStats st = m.kv_stats();
    EXPECT_GT(st.snapshot_bytes, 0);
    EXPECT_EQ(st.snapshot_bytes % 3, 0);
    std::printf("[lfm2 snapshots] n_batch %d: %lld snapshot bytes for 3 blocks\n", n_batch,
                static_cast<long long>(st.snapshot_bytes));
    auto g2 = m.generate(std::span<const int32_t>(p2), greedy_lp(12));
    ASSERT_TRUE(g2.ok()) << g2.status().to_string();
    EXPECT_EQ(g2->timings.cached_tokens, 64) << "n_batch " << n_batch;
    Model fresh = load(512);
    auto f2 = fresh.generate(std::span<const int32_t>(p2), greedy_lp(12));
    ASSERT_TRUE(f2.ok());
    EXPECT_EQ(f2->timings.cached_tokens, 0);
    expect_same_generation(*g2, *f2,
                           n_batch == 512 ? "same slot, one prefill" : "same slot, chunks");

    // Resume at 96, where block 2's snapshot was taken by a decode step of g1... g2 replaced
    // the sequence after 64, so rebuild it: P1 again (resumes at 64), then a prompt that shares
    // 97 tokens of P1's context.
    auto g3 = m.generate(std::span<const int32_t>(p1), greedy(5));
    ASSERT_TRUE(g3.ok());
    EXPECT_EQ(g3->timings.cached_tokens, 64);
    const auto ctx = m.cached_tokens();
    ASSERT_GE(ctx.size(), 99u);
    const auto p4 = cat(std::vector<int32_t>(ctx.begin(), ctx.begin() + 97), some_tokens(9, nv, 5));
    auto g4 = m.generate(std::span<const int32_t>(p4), greedy_lp(10));
    ASSERT_TRUE(g4.ok());
    EXPECT_EQ(g4->timings.cached_tokens, 96);
    fresh.reset();
    auto f4 = fresh.generate(std::span<const int32_t>(p4), greedy_lp(10));
    ASSERT_TRUE(f4.ok());
    expect_same_generation(*g4, *f4, "same slot, decode-made snapshot");
  }
}

// The state file keeps the blocks' conv-state snapshots: a loaded model whose next prompt
// diverges before the saved sequence's end still resumes at the last block boundary before the
// divergence (as the model that saved it does), with the same tokens as a fresh model.
TEST(EngineLfm2, StateFileKeepsTheBlockSnapshots) {
  const std::string path = ::testing::TempDir() + "/engine_lfm2_snapshots.gxkv";
  Model a = load(512);
  const int32_t nv = a.info().n_vocab;
  const auto p1 = cat(some_tokens(75, nv), some_tokens(20, nv, 977));
  ASSERT_TRUE(a.generate(std::span<const int32_t>(p1), greedy(5)).ok());
  ASSERT_TRUE(a.save_state(path).ok());
  // Diverges at token 80: blocks 0 and 1 (tokens 0..63) are before it.
  const auto p2 = cat(std::vector<int32_t>(p1.begin(), p1.begin() + 80), some_tokens(12, nv, 4));
  Model b = load(512);
  Status s = b.load_state(path);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_GT(b.kv_stats().snapshot_bytes, 0) << "no snapshot came back from the file";
  auto from_file = b.generate(std::span<const int32_t>(p2), greedy_lp(10));
  ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
  EXPECT_EQ(from_file->timings.cached_tokens, 64);
  Model fresh = load(512);
  auto f = fresh.generate(std::span<const int32_t>(p2), greedy_lp(10));
  ASSERT_TRUE(f.ok());
  expect_same_generation(*from_file, *f, "resumed from a state file's snapshot");
  std::remove(path.c_str());
}

// The block prefix cache of a state model: a new request with the same long system prefix
// attaches the cached blocks (another request ran in between, so the slot no longer holds them)
// and restores the states from the last attached block; so does a second sequence slot while
// the first still generates.
Model load_slots(int32_t n_seq) {
  ModelBuilder b(tiny_lfm2());
  b.with_context_size(512).with_kv_cache_type(KvCacheType::kF32).with_max_sequences(n_seq);
  auto m = b.with_device(Device::cpu()).with_threads(2).build();
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

TEST(EngineLfm2, PrefixCacheAcrossRequestsRestoresTheStates) {
  Model m = load_slots(1);
  const int32_t nv = m.info().n_vocab;
  const auto system = some_tokens(70, nv, 400);
  const auto q1 = cat(system, some_tokens(10, nv, 1));
  const auto q2 = cat(system, some_tokens(12, nv, 2));
  ASSERT_TRUE(m.generate(std::span<const int32_t>(q1), greedy(3)).ok());
  ASSERT_TRUE(m.generate(std::span<const int32_t>(some_tokens(40, nv, 9)), greedy(3)).ok());
  const int64_t hits0 = m.kv_stats().prefix_hits;
  auto g = m.generate(std::span<const int32_t>(q2), greedy_lp(12));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->timings.cached_tokens, 64);
  EXPECT_EQ(m.kv_stats().prefix_hits - hits0, 64);
  Model fresh = load(512);
  auto f = fresh.generate(std::span<const int32_t>(q2), greedy_lp(12));
  ASSERT_TRUE(f.ok());
  expect_same_generation(*g, *f, "prefix cache, one slot");

  // Two slots: q1 generates in one while q2 arrives; q2 takes the other slot and attaches the
  // system prompt's blocks that q1's sequence registered.
  auto two = std::make_unique<Model>(load_slots(2));
  std::promise<void> started;
  std::promise<void> release;
  auto released = release.get_future().share();
  int seen = 0;
  auto on_token = [&](std::string_view, int32_t) {
    if (seen++ == 0) {
      started.set_value();
      released.wait();  // the engine keeps stepping q1 meanwhile
    }
    return true;
  };
  std::thread t([&] { (void)two->generate(std::span<const int32_t>(q1), greedy(300), on_token); });
  started.get_future().wait();
  auto g2 = two->generate(std::span<const int32_t>(q2), greedy_lp(12));
  const int64_t hits = two->kv_stats().prefix_hits;
  release.set_value();
  t.join();
  ASSERT_TRUE(g2.ok()) << g2.status().to_string();
  std::printf("[lfm2 snapshots] two slots: cached %d, prefix hits %lld\n",
              g2->timings.cached_tokens, static_cast<long long>(hits));
  EXPECT_EQ(g2->timings.cached_tokens, 64);
  EXPECT_EQ(hits, 64);
  expect_same_generation(*g2, *f, "prefix cache, second slot");
}

// With images (tiny LFM2-VL): the same image prompt followed by another question resumes at
// the last block boundary inside the shared image tokens, with the tokens of a fresh model.
TEST(EngineLfm2, ImagePromptReusesTheImageBlocksForAnotherQuestion) {
  auto vl = [] {
    auto r = ModelBuilder(data_dir() + "/tiny-lfm2vl-f32.gguf")
                 .with_mmproj(data_dir() + "/mmproj-tiny-lfm2vl-f32.gguf")
                 .with_device(Device::cpu())
                 .with_threads(2)
                 .with_context_size(4096)
                 .with_kv_cache_type(KvCacheType::kF32)
                 .build();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(*r);
  };
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  const std::vector<Image> cat_img = {
      Image::from_file(std::string(root ? root : ".") + "/tests/data/vision/chelsea.png")};
  Model m = vl();
  auto first = m.generate("<image>What is this animal doing here?", cat_img, greedy(6));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto second = m.generate("<image>Which colours do you see?", cat_img, greedy_lp(8));
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  // The shared part is the image's tokens (and what precedes them): more than two blocks.
  size_t shared = 0;
  while (shared < first->prompt_tokens.size() && shared < second->prompt_tokens.size() &&
         first->prompt_tokens[shared] == second->prompt_tokens[shared])
    ++shared;
  std::printf("[lfm2 snapshots] image prompt: %zu shared tokens, %d cached\n", shared,
              second->timings.cached_tokens);
  EXPECT_GT(second->timings.cached_tokens, 64);
  EXPECT_EQ(second->timings.cached_tokens, static_cast<int32_t>(shared / 32 * 32));
  Model fresh = vl();
  auto want = fresh.generate("<image>Which colours do you see?", cat_img, greedy_lp(8));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(want->timings.cached_tokens, 0);
  expect_same_generation(*second, *want, "image prompt");
}

}  // namespace
}  // namespace geniex
