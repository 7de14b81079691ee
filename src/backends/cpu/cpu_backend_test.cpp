// The CPU backend itself: activation-quantization reuse across matmuls, outputs written in place,
// several bound outputs, huge-page weight copies, packed tables read by embeddings, capability
// answers, and errors as Statuses. Every op and dtype against graph::run_reference (at every ISA
// level, 1 and 3 threads) is the conformance suite's job: tests/conformance.
#include "backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "conformance/compare.h"
#include "conformance/problem.h"
#include "core/huge_arena.h"
#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "graph/run_reference.h"
#include "quant/quant.h"

namespace geniex::backends {
namespace {

using namespace conformance;  // NOLINT(build/namespaces): the shared test helpers
using graph::Bindings;
using graph::Graph;
using graph::make_desc;

constexpr double kExactTol = 1e-6;
constexpr double kMatMulTol = 1e-5;

std::unique_ptr<Backend> backend_with(int threads) {
  auto b = make_cpu_backend(CpuBackendOptions{threads});
  EXPECT_TRUE(b.ok());
  return b.ok() ? std::move(*b) : nullptr;
}

// Several outputs bound at once (all kept alive to the end by the planner), one of them a view.
TEST(CpuBackend, SeveralOutputsBoundAtOnce) {
  const int64_t e = 24, t = 6;
  const auto x = gaussian(sz(e * t), 1.0f, 81);
  const auto wf = gaussian(sz(e * t), 1.0f, 82);
  std::vector<uint8_t> w16(wf.size() * 2);
  ASSERT_TRUE(quant::quantize_row(kF16, wf, w16).ok());
  const std::vector<int32_t> idx = {5, 0, 5, 2};
  Graph g;
  NodeId xn = g.add_input(make_desc(kF32, e, t), "x");
  NodeId wn = g.add_weight(make_desc(kF16, e * t), "w16");
  NodeId in = g.add_input(make_desc(kI32, 4), "idx");
  NodeId s = add(g, OpKind::kSilu, {xn});
  OpParams r1;
  r1.ne = {e * t, 1, 1, 1};
  NodeId flat = add(g, OpKind::kReshape, {s}, r1);
  NodeId sum = add(g, OpKind::kAdd, {flat, wn});
  OpParams r2;
  r2.ne = {e, t, 1, 1};
  NodeId back = add(g, OpKind::kReshape, {sum}, r2);
  NodeId rows = add(g, OpKind::kGetRows, {back, in});
  NodeId wview = add(g, OpKind::kReshape, {wn}, r2);
  NodeId y = add(g, OpKind::kMul, {back, wview});
  Bindings b;
  b.bind_input(xn, std::span<const float>(x));
  b.bind_weight(wn, kF16, w16);
  b.bind_input(in, std::span<const int32_t>(idx));
  std::vector<float> want_rows(sz(e * 4)), want_y(sz(e * t)), got_rows(want_rows.size()),
      got_y(want_y.size()), got_flat(sz(e * t)), want_flat(got_flat.size());
  Bindings rb = b;
  rb.bind_output(rows, want_rows);
  rb.bind_output(y, want_y);
  rb.bind_output(flat, want_flat);
  ASSERT_TRUE(graph::run_reference(g, rb).ok());
  auto be = backend_with(3);
  Bindings cb = b;
  cb.bind_output(rows, got_rows);
  cb.bind_output(y, got_y);
  cb.bind_output(flat, got_flat);
  ASSERT_TRUE(be->run(g, cb).ok());
  // SiLU runs through cpu::silu_rows (a few ULP from ref::silu), so not bit for bit.
  expect_close(got_rows, want_rows, kExactTol, "get_rows, several outputs");
  expect_close(got_y, want_y, kExactTol, "mul, several outputs");
  expect_close(got_flat, want_flat, kExactTol, "reshape, several outputs");
}

// Matmuls over one activation node quantize it once (q/k/v, gate/up): every result must still
// be bit-identical to that matmul alone, also after a matmul over another node in between and in
// a second run with new inputs (nothing stale carried across runs).
TEST(CpuBackend, MatMulsSharingAnInputEqualEachAloneAcrossRuns) {
  const int64_t k = 256, m = 5;
  const std::vector<std::pair<GgmlType, int64_t>> ws = {{GgmlType::kQ8_0, 40},
                                                        {GgmlType::kQ5_0, 24},
                                                        {GgmlType::kQ8_0, 16},
                                                        {GgmlType::kQ4_K, 32},
                                                        {GgmlType::kQ4_0, 8}};
  std::vector<std::vector<uint8_t>> wdata;
  for (size_t i = 0; i < ws.size(); ++i) {
    wdata.push_back(make_weight(ws[i].first, k, ws[i].second, 50 + static_cast<uint32_t>(i)));
  }
  Graph g;
  NodeId xn = g.add_input(make_desc(kF32, k, m), "x");
  NodeId x2 = add(g, OpKind::kAdd, {xn, xn});
  std::vector<NodeId> wn, ys;
  for (size_t i = 0; i < ws.size(); ++i) {
    wn.push_back(g.add_weight(make_desc(ws[i].first, k, ws[i].second), "w" + std::to_string(i)));
  }
  // x, x, x2 (another node between), x, x: the last two must not reuse x2's quantization.
  const std::vector<NodeId> inputs = {xn, xn, x2, xn, xn};
  for (size_t i = 0; i < ws.size(); ++i) ys.push_back(add(g, OpKind::kMatMul, {wn[i], inputs[i]}));
  auto be = backend_with(2);
  ASSERT_NE(be, nullptr);
  for (uint32_t run = 0; run < 2; ++run) {
    const auto x = gaussian(sz(k * m), 1.0f, 900 + run);
    std::vector<std::vector<float>> got(ws.size());
    Bindings b;
    b.bind_input(xn, std::span<const float>(x));
    for (size_t i = 0; i < ws.size(); ++i) {
      b.bind_weight(wn[i], ws[i].first, wdata[i]);
      got[i].assign(sz(ws[i].second * m), std::numeric_limits<float>::quiet_NaN());
      b.bind_output(ys[i], got[i]);
    }
    ASSERT_TRUE(be->run(g, b).ok());
    for (size_t i = 0; i < ws.size(); ++i) {
      std::vector<float> xi = x;
      if (inputs[i] == x2) {
        for (float& v : xi) v = v + v;
      }
      Graph one;
      NodeId w1 = one.add_weight(make_desc(ws[i].first, k, ws[i].second), "w");
      NodeId x1 = one.add_input(make_desc(kF32, k, m), "x");
      NodeId y1 = add(one, OpKind::kMatMul, {w1, x1});
      std::vector<float> want(got[i].size());
      Bindings ob;
      ob.bind_weight(w1, ws[i].first, wdata[i]);
      ob.bind_input(x1, std::span<const float>(xi));
      ob.bind_output(y1, want);
      auto fresh = backend_with(2);
      ASSERT_TRUE(fresh->run(one, ob).ok());
      EXPECT_EQ(std::memcmp(got[i].data(), want.data(), want.size() * sizeof(float)), 0)
          << "matmul " << i << " (" << ggml_type_name(ws[i].first) << ") in run " << run;
    }
  }
}

// Outputs that are ops are written straight into the caller's buffers (no arena copy). An
// output that later ops read, a second output computed from it, fresh buffers on each run of
// the same plan, and a run where only the second is bound must all give the reference's values,
// and a run must never write into the buffers of an earlier one (all are kept and checked last).
TEST(CpuBackend, OutputsWrittenInPlaceFollowEachRunsBindings) {
  const int64_t k = 64, n = 24, m = 3;
  constexpr uint32_t kRuns = 3;
  const auto wq = make_weight(GgmlType::kQ8_0, k, n, 77);
  Graph g;
  NodeId wn = g.add_weight(make_desc(GgmlType::kQ8_0, k, n), "w");
  NodeId xn = g.add_input(make_desc(kF32, k, m), "x");
  NodeId y = add(g, OpKind::kMatMul, {wn, xn});  // an output that z reads
  NodeId z = add(g, OpKind::kMul, {y, y});
  auto be = backend_with(2);
  ASSERT_NE(be, nullptr);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<float>> want_y(kRuns), want_z(kRuns), got_y(kRuns), got_z(kRuns);
  for (uint32_t run = 0; run < kRuns; ++run) {
    const auto x = gaussian(sz(k * m), 1.0f, 300 + run);
    Bindings b;
    b.bind_weight(wn, GgmlType::kQ8_0, wq);
    b.bind_input(xn, std::span<const float>(x));
    want_y[run].resize(sz(n * m));
    want_z[run].resize(sz(n * m));
    Bindings rb = b;
    rb.bind_output(y, want_y[run]);
    rb.bind_output(z, want_z[run]);
    ASSERT_TRUE(graph::run_reference(g, rb).ok());
    got_y[run].assign(sz(n * m), nan);
    got_z[run].assign(sz(n * m), nan);
    if (run != 2) b.bind_output(y, got_y[run]);  // run 2: y lives in the arena again
    b.bind_output(z, got_z[run]);
    ASSERT_TRUE(be->run(g, b).ok());
  }
  for (uint32_t run = 0; run < kRuns; ++run) {
    const std::string r = ", run " + std::to_string(run);
    if (run != 2) expect_close(got_y[run], want_y[run], kMatMulTol, "matmul output" + r);
    if (run == 2) {
      for (float v : got_y[run]) ASSERT_TRUE(std::isnan(v)) << "unbound output was written" + r;
    }
    expect_close(got_z[run], want_z[run], kMatMulTol, "output computed from an output" + r);
  }
}

// A matmul weight of kMinHugePageCopy bytes or more with no packed layout (Q6_K) is read from a
// copy on huge pages (in the backend's arena), made at its first use; a tied embedding over the
// same table reads that copy too. Shown by changing the caller's bytes after the first run
// (weights are immutable while bound, so only a copy explains unchanged results), and by the
// results matching the reference before that. Above and below 2 MiB (a HugeBuffer of its own
// would have been on 4 KiB pages).
void expect_unpacked_weight_read_from_copy(int64_t n) {
  SCOPED_TRACE("rows " + std::to_string(n));
  const int64_t k = 2048;  // rows of 1680 bytes
  auto w = make_weight(GgmlType::kQ6_K, k, n, 5);
  ASSERT_GE(w.size(), cpu::kMinHugePageCopy);
  const auto x = gaussian(sz(k), 1.0f, 6);
  const std::vector<int32_t> ids = {0, static_cast<int32_t>(n - 1), static_cast<int32_t>(n / 2), 7};
  Graph g;
  NodeId wn = g.add_weight(make_desc(GgmlType::kQ6_K, k, n), "token_embd");
  NodeId xn = g.add_input(make_desc(kF32, k, 1), "x");
  NodeId in = g.add_input(make_desc(kI32, 4), "ids");
  NodeId y = add(g, OpKind::kMatMul, {wn, xn});
  NodeId e = add(g, OpKind::kEmbedding, {wn, in});
  auto bind = [&](Bindings& b, std::vector<float>& yv, std::vector<float>& ev) {
    b.bind_weight(wn, GgmlType::kQ6_K, w);
    b.bind_input(xn, std::span<const float>(x));
    b.bind_input(in, std::span<const int32_t>(ids));
    yv.assign(sz(n), 0.0f);
    ev.assign(sz(4 * k), 0.0f);
    b.bind_output(y, yv);
    b.bind_output(e, ev);
  };
  std::vector<float> want_y, want_e;
  {
    Bindings rb;
    bind(rb, want_y, want_e);
    ASSERT_TRUE(graph::run_reference(g, rb).ok());
  }
  auto be = backend_with(2);
  ASSERT_NE(be, nullptr);
  std::vector<float> y1, e1;
  {
    Bindings b;
    bind(b, y1, e1);
    ASSERT_TRUE(be->run(g, b).ok());
  }
  expect_close(y1, want_y, kMatMulTol, "matmul over the copied weight");
  expect_close(e1, want_e, kExactTol, "embedding over the copied table");
  // Scale every super-block (f16 d at byte 208 of its 210): the caller's weight now differs.
  for (size_t o = 208; o + 2 <= w.size(); o += 210) w[o + 1] ^= 0x04;
  std::vector<float> y2, e2;
  {
    Bindings b;
    bind(b, y2, e2);
    ASSERT_TRUE(be->run(g, b).ok());
  }
  if (huge_pages_available()) {
    EXPECT_EQ(y2, y1) << "the matmul read the caller's bytes, not a copy";
    EXPECT_EQ(e2, e1) << "the embedding read the caller's bytes, not the matmul's copy";
  } else {  // no THP: no copy, the caller's bytes are read
    EXPECT_NE(y2, y1);
    EXPECT_NE(e2, e1);
  }
}

TEST(CpuBackend, UnpackedWeightIsReadFromItsHugePageCopy) {
  expect_unpacked_weight_read_from_copy(1280);  // 2.15 MB
  expect_unpacked_weight_read_from_copy(160);   // 269 KB
}

TEST(CpuOps, CopyToHugePagesKeepsTheBytesAndSkipsSmallWeights) {
  ThreadPool pool(3);
  std::vector<uint8_t> w(HugeBuffer::kHugePage * 2 + 4097);  // slices that do not divide it
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  const auto want = w;  // the copy hands the pages back with their contents (MADV_PAGEOUT)
  HugeArena plain(/*huge_pages=*/false);
  EXPECT_EQ(cpu::copy_to_huge_pages(pool, w, plain), nullptr) << "an arena on plain pages";
  HugeArena arena;
  const uint8_t* copy = cpu::copy_to_huge_pages(pool, w, arena);
  if (!huge_pages_available()) {
    EXPECT_EQ(copy, nullptr);
    return;
  }
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(std::memcmp(copy, want.data(), want.size()), 0);
  EXPECT_EQ(w, want);
  // A weight under 2 MiB is copied too (beside the first, in the same chunk); one under
  // kMinHugePageCopy is not.
  const std::span<const uint8_t> mid(w.data() + 1, cpu::kMinHugePageCopy + 3);
  const uint8_t* copy2 = cpu::copy_to_huge_pages(pool, mid, arena);
  ASSERT_NE(copy2, nullptr);
  EXPECT_EQ(std::memcmp(copy2, want.data() + 1, mid.size()), 0);
  EXPECT_EQ(arena.chunks(), 1u);
  EXPECT_EQ(std::memcmp(copy, want.data(), want.size()), 0)
      << "the second copy overwrote the first";
  EXPECT_EQ(cpu::copy_to_huge_pages(
                pool, std::span<const uint8_t>(w.data(), cpu::kMinHugePageCopy - 1), arena),
            nullptr);
}

TEST(CpuBackend, SupportsEveryBuildableMatMulAndEmbedding) {
  // Every type the graph accepts as a matmul weight has a dot kernel, so supports() is native.
  // A weight type without a dot product (Q8_1, Q8_K, I32) cannot be put in a MatMul at all:
  // Graph::add_op rejects it with kUnimplemented, so the backend's kUnsupported answer for a
  // missing kernel cannot be reached through a valid graph and is not tested here.
  auto be = backend_with(1);
  for (GgmlType t : {GgmlType::kQ8_1, GgmlType::kQ8_K, GgmlType::kI32}) {
    Graph g;
    NodeId w = g.add_weight(make_desc(t, 256, 4), "w");
    NodeId x = g.add_input(make_desc(kF32, 256), "x");
    auto y = g.add_op(OpKind::kMatMul, {w, x});
    ASSERT_FALSE(y.ok()) << ggml_type_name(t);
    EXPECT_EQ(y.status().code(), StatusCode::kUnimplemented);
  }
  for (uint32_t id = 0; id < 64; ++id) {
    const auto tr = ggml_type_traits(id);
    if (!tr || !quant::can_vec_dot(tr->type)) continue;
    Graph g;
    NodeId w = g.add_weight(make_desc(tr->type, 256, 4), "w");
    NodeId x = g.add_input(make_desc(kF32, 256), "x");
    NodeId e = g.add_input(make_desc(kI32, 2), "ids");
    NodeId y = add(g, OpKind::kMatMul, {w, x});
    NodeId emb = add(g, OpKind::kEmbedding, {w, e});
    EXPECT_EQ(be->supports(g, y).level, Support::kNative) << tr->name;
    EXPECT_EQ(be->supports(g, emb).level, Support::kNative) << tr->name;
    EXPECT_EQ(be->supports(g, w).level, Support::kNative) << "leaf nodes are always native";
  }
  EXPECT_NE(be->name().find("cpu"), std::string::npos) << be->name();
}

// ---------------------------------------------------------------------------------------------
// A tied table (token embedding and LM head in one tensor): once the matmul has packed it, the
// lookups read the packed copy, because the original pages were handed back to the kernel. The
// test overwrites the original after the first run; Q8_0 and Q4_0 lookups must still return the
// table's rows bit for bit (a wrong lane or block in the unpacking fails), and Q5_0, which has
// no unpacking, keeps reading the original (so it sees the overwrite: the fallback is taken).
TEST(CpuBackend, EmbeddingOfAPackedTableReadsThePackedCopy) {
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0}) {
    const std::string what(ggml_type_name(t));
    const int64_t e = 96, vocab = 19;  // 3 blocks per row; groups of 8 rows, the last partial
    auto table = make_weight(t, e, vocab, 33);
    const auto pristine = table;
    const std::vector<int32_t> ids = {18, 0, 7, 8, 16, 3, 18};
    std::vector<float> x(sz(e), 0.25f);
    Graph g;
    NodeId tn = g.add_weight(make_desc(t, e, vocab), "token_embd");
    NodeId in = g.add_input(make_desc(kI32, static_cast<int64_t>(ids.size())), "ids");
    NodeId xn = g.add_input(make_desc(kF32, e), "x");
    NodeId emb = add(g, OpKind::kEmbedding, {tn, in});
    NodeId logits = add(g, OpKind::kMatMul, {tn, xn});
    Bindings b;
    b.bind_weight(tn, t, table);
    b.bind_input(in, std::span<const int32_t>(ids));
    b.bind_input(xn, std::span<const float>(x));
    std::vector<float> want(ids.size() * sz(e)), want_logits(sz(vocab));
    Bindings rb = b;
    rb.bind_output(emb, want);
    rb.bind_output(logits, want_logits);
    ASSERT_TRUE(graph::run_reference(g, rb).ok()) << what;
    auto be = backend_with(2);
    for (int run = 0; run < 3; ++run) {
      std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
      std::vector<float> got_logits(want_logits.size());
      Bindings cb = b;
      cb.bind_output(emb, got);
      cb.bind_output(logits, got_logits);
      ASSERT_TRUE(be->run(g, cb).ok()) << what << " run " << run;
      expect_close(got_logits, want_logits, kMatMulTol, what + " logits");
      if (t == GgmlType::kQ5_0 && run > 0) {
        EXPECT_NE(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
            << what << ": no unpacking, so the (overwritten) original is read";
      } else {
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
            << what << " run " << run;
      }
      // The original's values are gone from here on: only the packed copy still holds them.
      for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint8_t>(pristine[i] ^ 0x5A);
    }
    // A token id past the table is an error on the packed path too, never a read out of bounds.
    const std::vector<int32_t> bad = {0, static_cast<int32_t>(vocab), 1, 2, 3, 4, 5};
    Bindings cb = b;
    cb.bind_input(in, std::span<const int32_t>(bad));
    std::vector<float> got(want.size()), got_logits(want_logits.size());
    cb.bind_output(emb, got);
    cb.bind_output(logits, got_logits);
    const Status s = be->run(g, cb);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << what << ": " << s.to_string();
  }
}

// Weight preparation is the prepare step's job, not the ops': after prepare(), the packed copy of a
// Q8_0 matmul weight and the dequantized copy of an F16 norm weight exist, so overwriting the
// caller's bytes before the first run changes nothing (a lazily made copy would read the new
// bytes). The results equal the reference over the original weights, bit for bit for the norm.
TEST(CpuBackend, PrepareMakesEveryWeightCopyBeforeTheFirstRun) {
  const int64_t k = 64, n = 24;
  auto w = make_weight(GgmlType::kQ8_0, k, n, 41);
  auto nw = make_weight(kF16, k, 1, 42);
  const auto x = gaussian(sz(2 * k), 1.0f, 43);
  Graph g;
  NodeId wn = g.add_weight(make_desc(GgmlType::kQ8_0, k, n), "w");
  NodeId nn = g.add_weight(make_desc(kF16, k), "norm");
  NodeId xn = g.add_input(make_desc(kF32, k, 2), "x");
  OpParams np;
  np.eps = 1e-6f;
  NodeId normed = add(g, OpKind::kRmsNorm, {xn, nn}, np);
  NodeId y = add(g, OpKind::kMatMul, {wn, normed});
  std::vector<float> want_y(sz(2 * n)), want_norm(sz(2 * k));
  auto bind = [&](Bindings& b, std::vector<float>& yv, std::vector<float>& nv) {
    b.bind_weight(wn, GgmlType::kQ8_0, w);
    b.bind_weight(nn, kF16, nw);
    b.bind_input(xn, std::span<const float>(x));
    b.bind_output(y, yv);
    b.bind_output(normed, nv);
  };
  {
    Bindings rb;
    bind(rb, want_y, want_norm);
    ASSERT_TRUE(graph::run_reference(g, rb).ok());
  }
  if (!cpu::repack_enabled(GgmlType::kQ8_0)) GTEST_SKIP() << "Q8_0 is not repacked here";
  auto be = backend_with(2);
  ASSERT_NE(be, nullptr);
  std::vector<float> got_y(want_y.size()), got_norm(want_norm.size());
  Bindings b;
  bind(b, got_y, got_norm);
  ASSERT_TRUE(be->prepare(g, b).ok());
  for (auto& byte : w) byte ^= 0x5A;
  for (auto& byte : nw) byte ^= 0x21;
  ASSERT_TRUE(be->run(g, b).ok());
  expect_close(got_y, want_y, kMatMulTol, "matmul over the prepared packed copy");
  EXPECT_EQ(std::memcmp(got_norm.data(), want_norm.data(), want_norm.size() * sizeof(float)), 0)
      << "the norm read its prepared F32 copy";
}

// A small decoder block end to end (embedding -> norm -> projections -> rope -> cache ->
// attention -> output projection -> residual -> glu FFN -> last-token logits).

// ---------------------------------------------------------------------------------------------
// Errors are Statuses, never crashes; the backend stays usable afterwards.

struct SmallGraph {
  Graph g;
  NodeId x, w, ids, st, slots, src, y, cw, rows;
};

SmallGraph small_graph() {
  SmallGraph s;
  s.x = s.g.add_input(make_desc(kF32, 32, 2), "x");
  s.w = s.g.add_weight(make_desc(GgmlType::kQ8_0, 32, 4), "w");
  s.ids = s.g.add_input(make_desc(kI32, 1), "row");
  s.st = s.g.add_state(make_desc(kF16, 32, 1, 4), "cache");
  s.slots = s.g.add_input(make_desc(kI32, 2), "slots");
  OpParams r;
  r.ne = {32, 1, 2, 1};
  s.src = add(s.g, OpKind::kReshape, {s.x}, r);
  s.cw = add(s.g, OpKind::kCacheWrite, {s.st, s.src, s.slots}, {}, "write");
  s.y = add(s.g, OpKind::kMatMul, {s.w, s.x}, {}, "proj");
  s.rows = add(s.g, OpKind::kGetRows, {s.y, s.ids}, {}, "pick");
  return s;
}

TEST(CpuBackend, ErrorsAreStatuses) {
  SmallGraph s = small_graph();
  const auto x = gaussian(64, 1.0f, 1);
  const auto w = make_weight(GgmlType::kQ8_0, 32, 4, 2);
  const std::vector<int32_t> row = {1}, slots = {0, 3};
  std::vector<uint8_t> cache(32 * 4 * 2);
  std::vector<float> out(4), bad_out(5), y_out(8);
  auto full = [&] {
    Bindings b;
    b.bind_input(s.x, std::span<const float>(x));
    b.bind_weight(s.w, GgmlType::kQ8_0, w);
    b.bind_input(s.ids, std::span<const int32_t>(row));
    b.bind_state(s.st, kF16, cache);
    b.bind_input(s.slots, std::span<const int32_t>(slots));
    b.bind_output(s.rows, out);
    return b;
  };
  auto be = backend_with(3);
  ASSERT_TRUE(be->run(s.g, full()).ok());

  auto expect_code = [&](const Bindings& b, StatusCode code, const std::string& needle,
                         const std::string& what) {
    const Status st = be->run(s.g, b);
    EXPECT_EQ(st.code(), code) << what << ": " << st.to_string();
    EXPECT_NE(st.message().find(needle), std::string::npos) << what << ": " << st.to_string();
  };
  {
    Bindings b;  // nothing bound
    b.bind_output(s.rows, out);
    expect_code(b, StatusCode::kInvalidArgument, "'x'", "unbound input");
  }
  {
    Bindings b = full();
    b.bind_output(s.rows, bad_out);
    expect_code(b, StatusCode::kInvalidArgument, "elements", "wrong-size output");
  }
  {
    Bindings b = full();
    b.bind_output(999, out);
    expect_code(b, StatusCode::kInvalidArgument, "999", "output of a missing node");
  }
  {
    Bindings b = full();
    b.bind_input(s.x, std::span<const float>(x).first(60));
    expect_code(b, StatusCode::kInvalidArgument, "'x'", "short input");
  }
  {
    Bindings b = full();
    b.bind_input(s.slots, std::span<const int32_t>(row));
    expect_code(b, StatusCode::kInvalidArgument, "'slots'", "short I32 input");
  }
  {
    Bindings b = full();
    b.bind_weight(s.w, GgmlType::kQ8_0, std::span<const uint8_t>(w).first(w.size() - 1));
    expect_code(b, StatusCode::kInvalidArgument, "'w'", "short weight");
  }
  {
    Bindings b = full();
    b.bind_weight(s.w, GgmlType::kQ4_0, w);
    expect_code(b, StatusCode::kInvalidArgument, "'w'", "weight bound with the wrong type");
  }
  {
    Bindings b;
    b.bind_input(s.x, std::span<const float>(x));
    b.bind_input(s.ids, std::span<const int32_t>(row));
    b.bind_state(s.st, kF16, cache);
    b.bind_input(s.slots, std::span<const int32_t>(slots));
    expect_code(b, StatusCode::kInvalidArgument, "'w'", "unbound weight");
  }
  {
    Bindings nb;
    nb.bind_input(s.x, std::span<const float>(x));
    nb.bind_weight(s.w, GgmlType::kQ8_0, w);
    nb.bind_input(s.ids, std::span<const int32_t>(row));
    nb.bind_input(s.slots, std::span<const int32_t>(slots));
    expect_code(nb, StatusCode::kInvalidArgument, "'cache'", "unbound state");
    nb.bind_state(s.st, kF16, std::span<uint8_t>(cache).first(cache.size() - 2));
    expect_code(nb, StatusCode::kInvalidArgument, "'cache'", "short state");
    nb.bind_state(s.st, kF32, cache);
    expect_code(nb, StatusCode::kInvalidArgument, "'cache'", "state bound with the wrong type");
  }
  for (int32_t bad_slot : {4, -1, 1 << 30}) {
    Bindings b = full();
    const std::vector<int32_t> bad = {0, bad_slot};
    b.bind_input(s.slots, std::span<const int32_t>(bad));
    expect_code(b, StatusCode::kOutOfRange, "write", "slot " + std::to_string(bad_slot));
  }
  for (int32_t bad_row : {2, -1}) {
    Bindings b = full();
    const std::vector<int32_t> bad = {bad_row};
    b.bind_input(s.ids, std::span<const int32_t>(bad));
    expect_code(b, StatusCode::kOutOfRange, "pick", "get_rows " + std::to_string(bad_row));
  }
  // Embedding ids out of range.
  {
    Graph g;
    NodeId t = g.add_weight(make_desc(GgmlType::kQ8_0, 32, 4), "tok");
    NodeId ids = g.add_input(make_desc(kI32, 3), "ids");
    NodeId e = add(g, OpKind::kEmbedding, {t, ids}, {}, "embed");
    std::vector<float> eo(96);
    for (int32_t bad_id : {4, -3}) {
      const std::vector<int32_t> idv = {0, bad_id, 1};
      Bindings b;
      b.bind_weight(t, GgmlType::kQ8_0, w);
      b.bind_input(ids, std::span<const int32_t>(idv));
      b.bind_output(e, eo);
      const Status st = be->run(g, b);
      EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.to_string();
    }
  }
  // The backend still works after every failure, and the good run is reproducible.
  std::vector<float> first = out;
  std::fill(out.begin(), out.end(), 0.0f);
  ASSERT_TRUE(be->run(s.g, full()).ok());
  EXPECT_EQ(out, first);
}

}  // namespace
}  // namespace geniex::backends
