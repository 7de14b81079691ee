// KvManager: paging, prefix reuse, copy-on-write, sliding-window trimming, spill, shift and
// state files — checked through the bytes the views point at.
#include "runtime/kv_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

namespace geniex::runtime {
namespace {

constexpr int64_t kRow = 8;  // F32 elements per K/V row

KvManagerSpec make_spec(int32_t n_layers, int32_t window_every = 0, int32_t window = 0) {
  KvManagerSpec s;
  s.type = GgmlType::kF32;
  s.block_size = 4;
  s.n_ctx = 64;
  s.n_seq_max = 2;
  s.n_batch = 8;
  s.rewind_margin = 0;
  for (int32_t il = 0; il < n_layers; ++il) {
    KvLayerSpec l;
    l.k_row_elems = kRow;
    l.v_row_elems = kRow;
    l.sliding_window = window_every > 0 && il % window_every != 0 ? window : 0;
    s.layers.push_back(l);
  }
  return s;
}

float* k_row(KvManager& m, int il, int32_t row) {
  return reinterpret_cast<float*>(m.store(il).k_buffer().data()) + row * kRow;
}
float* v_row(KvManager& m, int il, int32_t row) {
  return reinterpret_cast<float*>(m.store(il).v_buffer().data()) + row * kRow;
}

// Value a test writes for (layer, position): recognisable after any move.
float tag(int il, int32_t pos, int e) { return static_cast<float>(il * 100000 + pos * 10 + e); }

// One step: reserves `toks`, writes every layer's new rows with tags of their positions.
void step(KvManager& m, KvManager::SeqId s, const std::vector<int32_t>& toks) {
  ASSERT_TRUE(m.begin_step(s, toks).ok());
  const auto pos = m.step_positions(s);
  KvLayerView v;
  for (int il = 0; il < static_cast<int>(m.spec().layers.size()); ++il) {
    ASSERT_TRUE(m.layer_view(s, il, v).ok());
    ASSERT_EQ(v.slots.size(), toks.size());
    for (size_t t = 0; t < toks.size(); ++t) {
      for (int e = 0; e < kRow; ++e) {
        k_row(m, il, v.slots[t])[e] = tag(il, pos[t], e);
        v_row(m, il, v.slots[t])[e] = -tag(il, pos[t], e);
      }
    }
  }
  m.end_step(s, true);
}

// Checks that layer il's view of s lists exactly positions [lo, hi) with their tags.
void expect_view(KvManager& m, KvManager::SeqId s, int il, int32_t lo, int32_t hi,
                 int32_t pos_shift = 0) {
  ASSERT_TRUE(m.begin_step(s, std::vector<int32_t>{7}).ok());
  KvLayerView v;
  ASSERT_TRUE(m.layer_view(s, il, v).ok());
  std::vector<int32_t> live;
  for (size_t j = 0; j + 1 < v.rows.size(); ++j) {  // the last is the new token
    if (v.pos[j] < 0) continue;
    live.push_back(v.pos[j]);
    EXPECT_EQ(k_row(m, il, v.rows[j])[3], tag(il, v.pos[j] + pos_shift, 3)) << "pos " << v.pos[j];
    EXPECT_EQ(v_row(m, il, v.rows[j])[5], -tag(il, v.pos[j] + pos_shift, 5));
  }
  std::vector<int32_t> want(static_cast<size_t>(hi - lo));
  std::iota(want.begin(), want.end(), lo);
  EXPECT_EQ(live, want) << "layer " << il;
  m.end_step(s, false);
}

std::vector<int32_t> range_tokens(int32_t n, int32_t base = 1000) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), base);
  return t;
}

TEST(KvManager, StepsAppendAndMemoryGrowsWithUse) {
  auto m = KvManager::create(make_spec(2));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto s = (*m)->open_sequence();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*m)->stats().bytes_touched, 0);
  step(**m, *s, range_tokens(6));
  step(**m, *s, {5000});
  EXPECT_EQ((*m)->n_tokens(*s), 7);
  EXPECT_EQ((*m)->next_pos(*s), 7);
  // 7 tokens = 2 blocks of 4 → 2 frames per layer, nothing more touched.
  const auto st = (*m)->stats();
  EXPECT_EQ(st.frames, 4);
  EXPECT_EQ(st.bytes_touched, 4 * 4 * kRow * 4 * 2);
  expect_view(**m, *s, 0, 0, 7);
  expect_view(**m, *s, 1, 0, 7);
}

TEST(KvManager, ContextOverflowIsOutOfRangeAndChangesNothing) {
  auto m = KvManager::create(make_spec(1));
  ASSERT_TRUE(m.ok());
  auto s = (*m)->open_sequence();
  step(**m, *s, range_tokens(60));
  Status st = (*m)->begin_step(*s, range_tokens(5));
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("context"), std::string::npos);
  EXPECT_EQ((*m)->n_tokens(*s), 60);
  expect_view(**m, *s, 0, 0, 60);
}

TEST(KvManager, SequencesAreLimited) {
  auto m = KvManager::create(make_spec(1));
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->open_sequence().ok());
  ASSERT_TRUE((*m)->open_sequence().ok());
  auto third = (*m)->open_sequence();
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
}

TEST(KvManager, RolledBackStepLeavesNoTrace) {
  auto m = KvManager::create(make_spec(1));
  auto s = (*m)->open_sequence();
  step(**m, *s, range_tokens(3));
  const auto before = (*m)->stats();
  ASSERT_TRUE((*m)->begin_step(*s, range_tokens(9)).ok());
  (*m)->end_step(*s, false);
  EXPECT_EQ((*m)->n_tokens(*s), 3);
  EXPECT_EQ((*m)->stats().frames, before.frames);
  expect_view(**m, *s, 0, 0, 3);
}

TEST(KvManager, PrefixCacheReusesBlocksOfAClosedSequence) {
  auto m = KvManager::create(make_spec(2));
  auto a = (*m)->open_sequence();
  const auto prompt = range_tokens(10);
  step(**m, *a, prompt);
  (*m)->close_sequence(*a);
  EXPECT_EQ((*m)->stats().blocks_cached, 2);  // two full blocks kept, the partial one freed

  auto b = (*m)->open_sequence();
  auto longer = prompt;
  longer.push_back(77);
  EXPECT_EQ((*m)->reuse_prefix(*b, longer), 8);  // two full blocks
  EXPECT_EQ((*m)->stats().prefix_hits, 8);
  expect_view(**m, *b, 0, 0, 8);
  expect_view(**m, *b, 1, 0, 8);
  // A different prompt finds nothing.
  auto c = (*m)->open_sequence();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*m)->reuse_prefix(*c, range_tokens(10, 2000)), 0);
}

TEST(KvManager, CopyOnWriteKeepsTheSharedBlockIntact) {
  auto m = KvManager::create(make_spec(1));
  auto a = (*m)->open_sequence();
  step(**m, *a, range_tokens(8));
  auto b = (*m)->open_sequence();
  // b shares a's two blocks (a is still open); its last two prompt tokens are evaluated again,
  // so it writes cells 6 and 7 inside the shared second block: that block is copied first.
  const auto p = range_tokens(8);
  EXPECT_EQ((*m)->reuse_prefix(*b, p), 6);
  ASSERT_TRUE((*m)->begin_step(*b, std::vector<int32_t>{p[6], p[7]}).ok());
  KvLayerView v;
  ASSERT_TRUE((*m)->layer_view(*b, 0, v).ok());
  ASSERT_EQ(v.slots.size(), 2u);
  k_row(**m, 0, v.slots[1])[3] = -1.0f;  // b's cell 7
  (*m)->end_step(*b, true);
  expect_view(**m, *a, 0, 0, 8);  // a's cell 7 still holds its tag
  // b's first 6 cells came from a; cells 6 and 7 are b's own.
  ASSERT_TRUE((*m)->begin_step(*b, std::vector<int32_t>{1}).ok());
  ASSERT_TRUE((*m)->layer_view(*b, 0, v).ok());
  EXPECT_EQ(k_row(**m, 0, v.rows[6])[3], tag(0, 6, 3));
  EXPECT_EQ(k_row(**m, 0, v.rows[7])[3], -1.0f);
  (*m)->end_step(*b, false);
}

TEST(KvManager, OwnPrefixIsKeptAndTruncatedOnDivergence) {
  auto m = KvManager::create(make_spec(1));
  auto s = (*m)->open_sequence();
  step(**m, *s, range_tokens(9));
  auto p = range_tokens(9);
  p[5] = 1;
  EXPECT_EQ((*m)->reuse_prefix(*s, p), 5);
  EXPECT_EQ((*m)->n_tokens(*s), 5);
  expect_view(**m, *s, 0, 0, 5);
  // The same prompt again: all but the last two tokens are reused.
  step(**m, *s, std::vector<int32_t>(p.begin() + 5, p.end()));
  EXPECT_EQ((*m)->reuse_prefix(*s, p), 7);
}

TEST(KvManager, SlidingLayersKeepOnlyTheirWindow) {
  auto spec = make_spec(2, 2, 6);  // layer 1 has a window of 6
  auto m = KvManager::create(spec);
  ASSERT_TRUE(m.ok());
  auto s = (*m)->open_sequence();
  for (int i = 0; i < 40; ++i) step(**m, *s, {i});
  // Next query is position 40: it sees positions > 34 in the window layer, but whole blocks
  // are kept, so positions from 32 on (block 8) plus block 8's... blocks whose max pos <= 34
  // are gone: [0, 36) except the block containing 35 (positions 32..35).
  expect_view(**m, *s, 0, 0, 40);
  expect_view(**m, *s, 1, 32, 40);
  const auto st = (*m)->stats();
  EXPECT_EQ(st.frames, 10 + 2);  // 10 blocks in the full layer, 2 in the window layer
}

TEST(KvManager, RewindMarginKeepsReuseAfterTrimming) {
  auto spec = make_spec(2, 2, 6);
  spec.rewind_margin = 8;
  auto m = KvManager::create(spec);
  auto s = (*m)->open_sequence();
  for (int i = 0; i < 40; ++i) step(**m, *s, {i});
  // Back 8 tokens: the window before position 32 is still there.
  EXPECT_EQ((*m)->truncate(*s, 32), 32);
  expect_view(**m, *s, 1, 24, 32);
}

TEST(KvManager, TruncatingBehindTrimmedWindowStartsOver) {
  auto m = KvManager::create(make_spec(2, 2, 6));
  auto s = (*m)->open_sequence();
  for (int i = 0; i < 40; ++i) step(**m, *s, {i});
  // Back to 20 tokens: layer 1 no longer has positions 15..19.
  EXPECT_EQ((*m)->truncate(*s, 20), 0);
  EXPECT_EQ((*m)->n_tokens(*s), 0);
}

TEST(KvManager, SpillKeepsEveryRowUnderABudget) {
  auto spec = make_spec(3);
  spec.n_seq_max = 1;
  const size_t frame = 4 * kRow * 4 * 2;
  spec.budget_bytes = 20 * frame;  // 20 frames for 3 layers x 16 blocks
  spec.spill_dir = ::testing::TempDir();
  auto m = KvManager::create(spec);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto s = (*m)->open_sequence();
  for (int i = 0; i < 8; ++i) step(**m, *s, range_tokens(7, i * 7));
  const auto st = (*m)->stats();
  EXPECT_LE(st.frames_resident, 20);
  EXPECT_GT(st.frames_spilled, 0);
  EXPECT_GT(st.spill_writes, 0);
  EXPECT_LE(st.bytes_touched, static_cast<int64_t>(20 * frame));
  for (int il = 0; il < 3; ++il) expect_view(**m, *s, il, 0, 56);
  EXPECT_GT((*m)->stats().spill_reads, 0);
}

TEST(KvManager, BudgetSmallerThanOneLayerIsAClearError) {
  auto spec = make_spec(2);
  spec.n_seq_max = 1;
  spec.budget_bytes = 3 * 4 * kRow * 4 * 2;  // 3 frames: one layer of 64 tokens needs 16
  spec.spill_dir = ::testing::TempDir();
  auto m = KvManager::create(spec);
  ASSERT_TRUE(m.ok());
  auto s = (*m)->open_sequence();
  ASSERT_TRUE((*m)->begin_step(*s, range_tokens(40)).ok());
  KvLayerView v;
  Status st = (*m)->layer_view(*s, 0, v);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_NE(st.message().find("budget"), std::string::npos);
  (*m)->end_step(*s, false);
}

TEST(KvManager, ShiftDropsTokensAndRotatesTheRest) {
  auto m = KvManager::create(make_spec(1));
  auto s = (*m)->open_sequence();
  step(**m, *s, range_tokens(20));
  int64_t rotated = 0;
  auto rotate = [&](int il, uint8_t* rows, int64_t n, int32_t delta) -> Status {
    EXPECT_EQ(delta, -6);
    auto* f = reinterpret_cast<float*>(rows);
    for (int64_t r = 0; r < n; ++r) {
      for (int e = 0; e < kRow; ++e) {  // re-tag with the new position
        const float old = f[r * kRow + e];
        f[r * kRow + e] = old + static_cast<float>(delta * 10);
      }
    }
    rotated += n;
    (void)il;
    return {};
  };
  ASSERT_TRUE((*m)->shift(*s, 4, 6, rotate).ok());
  EXPECT_EQ(rotated, 10);
  EXPECT_EQ((*m)->n_tokens(*s), 14);
  EXPECT_EQ((*m)->next_pos(*s), 14);
  const auto t = (*m)->tokens(*s);
  EXPECT_EQ(t[3], 1003);
  EXPECT_EQ(t[4], 1010);
  // Positions 0..13 with tags matching them (rotated rows were re-tagged by -60).
  ASSERT_TRUE((*m)->begin_step(*s, std::vector<int32_t>{7}).ok());
  KvLayerView v;
  ASSERT_TRUE((*m)->layer_view(*s, 0, v).ok());
  std::vector<int32_t> live;
  for (size_t j = 0; j + 1 < v.rows.size(); ++j) {
    if (v.pos[j] < 0) continue;
    live.push_back(v.pos[j]);
    const float want = v.pos[j] < 4 ? tag(0, v.pos[j], 3) : tag(0, v.pos[j] + 6, 3) - 60.0f;
    EXPECT_EQ(k_row(**m, 0, v.rows[j])[3], want) << v.pos[j];
  }
  EXPECT_EQ(live.size(), 14u);
  EXPECT_EQ(v.pos.back(), 14);
  (*m)->end_step(*s, false);
}

TEST(KvManager, SaveAndLoadRoundTrip) {
  auto m = KvManager::create(make_spec(2, 2, 6));
  auto s = (*m)->open_sequence();
  for (int i = 0; i < 21; ++i) step(**m, *s, {i});
  const std::string path = ::testing::TempDir() + "/kv_state.gxkv";
  ASSERT_TRUE((*m)->save(*s, path, "model-a").ok());

  auto m2 = KvManager::create(make_spec(2, 2, 6));
  auto s2 = (*m2)->open_sequence();
  Status st = (*m2)->load(*s2, path, "model-a");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ((*m2)->n_tokens(*s2), 21);
  expect_view(**m2, *s2, 0, 0, 21);
  expect_view(**m2, *s2, 1, 16, 21);
  // It continues like the original.
  step(**m2, *s2, {21});
  expect_view(**m2, *s2, 0, 0, 22);

  // Another model's fingerprint, a flipped byte, a truncated file.
  EXPECT_EQ((*m2)->load(*s2, path, "model-b").code(), StatusCode::kInvalidArgument);
  std::vector<char> bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::vector<char>& b) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  auto flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  write(flipped);
  st = (*m2)->load(*s2, path, "model-a");
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.to_string();
  write(std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(bytes.size() / 3)));
  EXPECT_EQ((*m2)->load(*s2, path, "model-a").code(), StatusCode::kDataLoss);
  write(std::vector<char>{'n', 'o', 'p', 'e'});
  EXPECT_EQ((*m2)->load(*s2, path, "model-a").code(), StatusCode::kDataLoss);
  EXPECT_EQ((*m2)->load(*s2, path + ".missing", "model-a").code(), StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(KvManager, QuantizedTypesNeedWholeBlockRows) {
  auto spec = make_spec(1);
  spec.type = GgmlType::kQ8_0;
  EXPECT_EQ(KvManager::create(spec).status().code(), StatusCode::kInvalidArgument);  // 8 elems
  spec.layers[0].k_row_elems = spec.layers[0].v_row_elems = 64;
  auto m = KvManager::create(spec);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->bytes_per_token(), 2u * 2u * 34u);
}

}  // namespace
}  // namespace geniex::runtime

namespace geniex::runtime {
namespace {

int64_t vm_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// Gemma 3 270M's KV layout (18 layers, one KV head of 256, f16; 15 sliding layers with a window
// of 512) filled to 32K tokens under a 40 MiB budget: the process's resident memory grows by at
// most the budget plus bookkeeping, every row comes back intact, and the full f16 KV (576 MiB
// without windows, ~104 MiB with them) never has to fit.
TEST(KvManager, Gemma270mLayoutAt32kStaysUnderTheBudget) {
  KvManagerSpec spec;
  spec.type = GgmlType::kF16;
  spec.block_size = 32;
  spec.n_ctx = 32768;
  spec.n_batch = 4096;
  spec.n_seq_max = 1;
  for (int il = 0; il < 18; ++il) {
    KvLayerSpec l;
    l.k_row_elems = l.v_row_elems = 256;
    l.sliding_window = (il + 1) % 6 == 0 ? 0 : 512;
    spec.layers.push_back(l);
  }
  const size_t budget = size_t{40} << 20;
  spec.budget_bytes = budget;
  spec.spill_dir = ::testing::TempDir();
  const int64_t rss0 = vm_rss_bytes();
  ASSERT_GT(rss0, 0);
  auto m = KvManager::create(spec);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto s = (*m)->open_sequence();
  ASSERT_TRUE(s.ok());
  int64_t peak = 0;
  std::vector<int32_t> toks(4096, 1);
  KvLayerView v;
  for (int step_i = 0; step_i < 8; ++step_i) {
    ASSERT_TRUE((*m)->begin_step(*s, toks).ok());
    const auto pos = (*m)->step_positions(*s);
    for (int il = 0; il < 18; ++il) {
      Status st = (*m)->layer_view(*s, il, v);
      ASSERT_TRUE(st.ok()) << st.to_string();
      auto* k = (*m)->store(il).k_buffer().data();
      for (size_t t = 0; t < v.slots.size(); ++t) {  // row bytes: (layer, position) stamp
        auto* row = k + static_cast<size_t>(v.slots[t]) * 512;
        std::memset(row, (il * 31 + pos[t]) & 0xff, 512);
      }
      peak = std::max(peak, vm_rss_bytes() - rss0);
    }
    (*m)->end_step(*s, true);
  }
  EXPECT_EQ((*m)->n_tokens(*s), 32768);
  const auto stats = (*m)->stats();
  EXPECT_GT(stats.spill_writes, 0);
  EXPECT_LE(stats.bytes_resident, static_cast<int64_t>(budget));
  // A global layer still sees all 32K positions with their bytes.
  ASSERT_TRUE((*m)->begin_step(*s, std::vector<int32_t>{}).code() == StatusCode::kInvalidArgument);
  (*m)->truncate(*s, 32767);
  ASSERT_TRUE((*m)->begin_step(*s, std::vector<int32_t>{1}).ok());
  ASSERT_TRUE((*m)->layer_view(*s, 5, v).ok());
  ASSERT_EQ(v.rows.size(), 32768u);
  const auto* k5 = (*m)->store(5).k_buffer().data();
  for (size_t j = 0; j + 1 < v.rows.size(); j += 97) {
    ASSERT_EQ(k5[static_cast<size_t>(v.rows[j]) * 512 + 7], (5 * 31 + v.pos[j]) & 0xff) << j;
  }
  (*m)->end_step(*s, false);
  // Block tables, handles, test vectors; under AddressSanitizer also its shadow memory (1/8 of
  // the bytes touched) and allocator slack.
  int64_t overhead = int64_t{8} << 20;
#if defined(__SANITIZE_ADDRESS__)
  overhead += static_cast<int64_t>(budget / 8) + (int64_t{8} << 20);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  overhead += static_cast<int64_t>(budget / 8) + (int64_t{8} << 20);
#endif
#endif
  EXPECT_LE(peak, static_cast<int64_t>(budget) + overhead)
      << "peak RSS growth " << (peak >> 20) << " MiB with a " << (budget >> 20) << " MiB budget";
  std::printf(
      "32K tokens, Gemma 3 270M KV layout, f16: peak RSS growth %.1f MiB (budget %zu MiB), "
      "%lld frames spilled, %lld spill writes, %lld reads\n",
      static_cast<double>(peak) / (1 << 20), budget >> 20,
      static_cast<long long>(stats.frames_spilled), static_cast<long long>(stats.spill_writes),
      static_cast<long long>(stats.spill_reads));
}

// ---------------------------------------------------------------------------------------------
// Recurrent-state snapshots (LFM2): layer 0 has K/V, layers 1 and 2 only a state (8 and 12
// bytes). A state after n tokens is recognisable: every byte of layer il is il * 50 + n.

KvManagerSpec state_spec() {
  KvManagerSpec s = make_spec(1);
  for (const int64_t bytes : {8, 12}) {
    KvLayerSpec l;
    l.state_bytes = bytes;
    s.layers.push_back(l);
  }
  return s;
}

uint8_t state_val(int il, int32_t n) { return static_cast<uint8_t>(il * 50 + n); }

std::vector<uint8_t> snapshot_of(int32_t n) {
  std::vector<uint8_t> v(20, state_val(2, n));
  std::fill_n(v.begin(), 8, state_val(1, n));
  return v;
}

void expect_states(KvManager& m, KvManager::SeqId s, int32_t n) {
  for (int il = 1; il <= 2; ++il) {
    for (uint8_t b : m.layer_state(s, il)) {
      ASSERT_EQ(b, n == 0 ? 0 : state_val(il, n)) << "layer " << il << " after " << n;
    }
  }
}

// A step like the StepRunner's: K/V rows of layer 0, a snapshot at each wanted point (the
// states after that token), the states after the last token; `snap` false takes none (a state
// file's blocks, say).
void state_step(KvManager& m, KvManager::SeqId s, const std::vector<int32_t>& toks,
                bool snap = true) {
  const int32_t n0 = m.n_tokens(s);
  ASSERT_TRUE(m.begin_step(s, toks).ok());
  KvLayerView v;
  ASSERT_TRUE(m.layer_view(s, 0, v).ok());
  const auto pos = m.step_positions(s);
  for (size_t t = 0; t < toks.size(); ++t) {
    for (int e = 0; e < kRow; ++e) {
      k_row(m, 0, v.slots[t])[e] = tag(0, pos[t], e);
      v_row(m, 0, v.slots[t])[e] = -tag(0, pos[t], e);
    }
  }
  std::vector<int32_t> points;
  m.snapshot_points(s, points);
  for (const int32_t k : points) {
    if (snap) {
      ASSERT_TRUE(m.set_snapshot(s, k, snapshot_of(n0 + k + 1)).ok());
    }
  }
  const auto n = static_cast<int32_t>(n0 + toks.size());
  for (int il = 1; il <= 2; ++il) {
    auto st = m.layer_state(s, il);
    std::fill(st.begin(), st.end(), state_val(il, n));
  }
  m.end_step(s, true);
}

TEST(KvManager, SnapshotsAreWantedAtBlockEndsAndChecked) {
  auto m = KvManager::create(state_spec());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ((*m)->snapshot_bytes(), 20);
  auto s = (*m)->open_sequence();
  ASSERT_TRUE((*m)->begin_step(*s, range_tokens(10)).ok());  // cells 0..9, block ends 3 and 7
  std::vector<int32_t> points;
  (*m)->snapshot_points(*s, points);
  EXPECT_EQ(points, (std::vector<int32_t>{3, 7}));
  EXPECT_FALSE((*m)->set_snapshot(*s, 4, snapshot_of(5)).ok());            // not a block end
  EXPECT_FALSE((*m)->set_snapshot(*s, 3, std::vector<uint8_t>(19)).ok());  // wrong size
  EXPECT_TRUE((*m)->set_snapshot(*s, 3, snapshot_of(4)).ok());
  (*m)->end_step(*s, true);
  EXPECT_EQ((*m)->stats().snapshots, 1);
  EXPECT_EQ((*m)->stats().snapshot_bytes, 20);
  // Decode steps: only the one that writes a block's last cell wants a snapshot.
  for (int32_t c = 10; c < 13; ++c) {
    ASSERT_TRUE((*m)->begin_step(*s, std::vector<int32_t>{c}).ok());
    (*m)->snapshot_points(*s, points);
    EXPECT_EQ(points, c == 11 ? std::vector<int32_t>{0} : std::vector<int32_t>{}) << c;
    (*m)->end_step(*s, true);
  }
  // A model without recurrent state wants none.
  auto plain = KvManager::create(make_spec(1));
  auto p = (*plain)->open_sequence();
  ASSERT_TRUE((*plain)->begin_step(*p, range_tokens(10)).ok());
  (*plain)->snapshot_points(*p, points);
  EXPECT_TRUE(points.empty());
  EXPECT_EQ((*plain)->snapshot_bytes(), 0);
  (*plain)->end_step(*p, true);
}

TEST(KvManager, TruncateResumesAtTheLastBlockWithASnapshot) {
  auto m = KvManager::create(state_spec());
  auto s = (*m)->open_sequence();
  state_step(**m, *s, range_tokens(6));
  state_step(**m, *s, range_tokens(7, 1006));  // 13 tokens: snapshots after 4, 8 and 12
  EXPECT_EQ((*m)->stats().snapshots, 3);
  expect_states(**m, *s, 13);
  EXPECT_EQ((*m)->truncate(*s, 13), 13);  // the whole sequence: states untouched
  expect_states(**m, *s, 13);
  EXPECT_EQ((*m)->truncate(*s, 11), 8);
  expect_states(**m, *s, 8);
  expect_view(**m, *s, 0, 0, 8);
  // The same-slot rule: a prompt sharing 10 tokens resumes at 8 with the states after 8.
  state_step(**m, *s, range_tokens(5, 1008));
  auto prompt = range_tokens(10);
  prompt.push_back(5);
  prompt.push_back(6);
  prompt.push_back(7);
  EXPECT_EQ((*m)->reuse_prefix(*s, prompt), 8);
  expect_states(**m, *s, 8);
  EXPECT_EQ((*m)->truncate(*s, 3), 0);  // before the first boundary
  expect_states(**m, *s, 0);
  EXPECT_EQ((*m)->stats().snapshots, 3);  // kept with the prefix cache's blocks
  (*m)->clear_prefix_cache();
  EXPECT_EQ((*m)->stats().snapshots, 0);  // freed with their blocks
}

TEST(KvManager, PrefixCacheRestoresStatesFromTheLastAttachedBlock) {
  auto m = KvManager::create(state_spec());
  auto a = (*m)->open_sequence();
  state_step(**m, *a, range_tokens(13));  // snapshots after 4, 8, 12
  const auto prompt = range_tokens(13);
  // A second sequence while a is open: the blocks are shared, the states restored from the
  // third block's snapshot; two prompt tokens are always left, so 12 tokens need 14.
  auto b = (*m)->open_sequence();
  auto longer = prompt;
  longer.push_back(99);
  EXPECT_EQ((*m)->reuse_prefix(*b, longer), 12);
  expect_states(**m, *b, 12);
  expect_view(**m, *b, 0, 0, 12);
  EXPECT_EQ((*m)->stats().prefix_hits, 12);
  EXPECT_EQ((*m)->stats().snapshots, 3);  // shared, not copied
  (*m)->close_sequence(*b);
  // The whole 13-token prompt: 11 may be reused, so the run stops at 8.
  b = (*m)->open_sequence();
  EXPECT_EQ((*m)->reuse_prefix(*b, prompt), 8);
  expect_states(**m, *b, 8);
  (*m)->close_sequence(*b);
  (*m)->close_sequence(*a);
  // From the prefix cache alone (a closed).
  b = (*m)->open_sequence();
  EXPECT_EQ((*m)->reuse_prefix(*b, longer), 12);
  expect_states(**m, *b, 12);
  (*m)->close_sequence(*b);
  (*m)->clear_prefix_cache();
  EXPECT_EQ((*m)->stats().snapshots, 0);
  EXPECT_EQ((*m)->stats().snapshot_bytes, 0);
}

TEST(KvManager, BlocksWithoutSnapshotAreNotResumedOnAStateModel) {
  auto m = KvManager::create(state_spec());
  auto a = (*m)->open_sequence();
  state_step(**m, *a, range_tokens(13), /*snap=*/false);  // e.g. loaded from a state file
  auto longer = range_tokens(13);
  longer.push_back(99);
  auto b = (*m)->open_sequence();
  EXPECT_EQ((*m)->reuse_prefix(*b, longer), 0);
  expect_states(**m, *b, 0);
  EXPECT_EQ((*m)->truncate(*a, 10), 0);  // nor by truncation
  expect_states(**m, *a, 0);
  // Only the first block has a snapshot: the run stops there.
  (*m)->close_sequence(*b);
  state_step(**m, *a, range_tokens(4));
  state_step(**m, *a, range_tokens(9, 1004), /*snap=*/false);
  b = (*m)->open_sequence();
  EXPECT_EQ((*m)->reuse_prefix(*b, longer), 4);
  expect_states(**m, *b, 4);
}

TEST(KvManager, CopyOnWriteAndShiftNeverKeepAStaleSnapshot) {
  auto m = KvManager::create(state_spec());
  auto a = (*m)->open_sequence();
  state_step(**m, *a, range_tokens(13));
  auto b = (*m)->open_sequence();
  auto longer = range_tokens(13);
  longer.push_back(99);
  ASSERT_EQ((*m)->reuse_prefix(*b, longer), 12);
  // b's shift drops tokens 2..5: its blocks are copied (the copies' cells move, so their
  // snapshots go) while a's keep theirs.
  auto rotate = [](int, uint8_t*, int64_t, int32_t) { return Status{}; };
  ASSERT_TRUE((*m)->shift(*b, 2, 4, rotate).ok());
  EXPECT_EQ((*m)->stats().snapshots, 3);
  std::vector<int32_t> points;
  ASSERT_TRUE((*m)->begin_step(*b, range_tokens(8, 500)).ok());  // cells 12..19
  (*m)->snapshot_points(*b, points);
  EXPECT_TRUE(points.empty());  // shifted cells are not at their own positions
  (*m)->end_step(*b, true);
  EXPECT_EQ((*m)->truncate(*b, 5), 0);  // no snapshot of b's own before the cut
  (*m)->close_sequence(*b);
  // a's blocks still resume with the right bytes.
  EXPECT_EQ((*m)->truncate(*a, 9), 8);
  expect_states(**m, *a, 8);
  // a continues differently after 8; the cached third block (dropped by a's cut) still gives
  // another sequence the states after 12.
  state_step(**m, *a, range_tokens(6, 700));
  auto c = (*m)->open_sequence();
  EXPECT_EQ((*m)->reuse_prefix(*c, range_tokens(14)), 12);
  expect_states(**m, *c, 12);
}

}  // namespace
}  // namespace geniex::runtime
