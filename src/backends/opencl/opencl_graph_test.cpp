// Whole graphs on the OpenCL backend: host-truth KV handling across runs (state changed on the
// host, rebound at another address, changed by a hook), the weight cache, the program cache,
// disabled ops, the memory limit and device selection.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <numeric>

#include "backends/opencl/opencl_shared_backend.h"
#include "core/fp16.h"

namespace geniex::backends::opencl_test {
namespace {

using graph::NodeId;
using graph::OpKind;
using graph::OpParams;

OpParams reshape_to(int64_t a, int64_t b, int64_t c = 1) {
  OpParams p;
  p.ne = {a, b, c, 1};
  return p;
}

// norm -> matmul -> rope -> cache write -> attention -> matmul -> glu -> add, over an F16 KV
// cache of kRows slots; the batch of kT tokens is written at slots 5.. (positions 5..).
struct LayerGraph {
  static constexpr int64_t kE = 64, kD = 32, kHq = 2, kHkv = 1, kT = 3, kRows = 16;
  Problem c;
  NodeId k_state = 0, v_state = 0, attn = 0, out = 0;
  std::vector<uint8_t> k_host, v_host;  // the KV cache bytes (F16)

  LayerGraph() {
    const NodeId x = c.input({kE, kT, 1, 1});
    const NodeId norm = c.op(OpKind::kRmsNorm, {x, c.weight(GgmlType::kF16, kE)});
    std::vector<int32_t> pos(kT);
    std::iota(pos.begin(), pos.end(), 5);
    const NodeId p = c.ints(pos, "pos");
    OpParams rope;
    rope.rope.mode = graph::RopeMode::kNeox;
    const NodeId q =
        c.op(OpKind::kRope,
             {c.op(OpKind::kReshape,
                   {c.op(OpKind::kMatMul, {c.weight(GgmlType::kQ8_0, kE, kD * kHq), norm})},
                   reshape_to(kD, kHq, kT)),
              p},
             rope);
    const NodeId k = c.op(
        OpKind::kRope,
        {c.op(OpKind::kReshape, {c.op(OpKind::kMatMul, {c.weight(GgmlType::kQ4_0, kE, kD), norm})},
              reshape_to(kD, kHkv, kT)),
         p},
        rope);
    const NodeId v =
        c.op(OpKind::kReshape, {c.op(OpKind::kMatMul, {c.weight(GgmlType::kF16, kE, kD), norm})},
             reshape_to(kD, kHkv, kT));
    k_state = c.g.add_state(graph::make_desc(GgmlType::kF16, kD, kHkv, kRows), "k_cache");
    v_state = c.g.add_state(graph::make_desc(GgmlType::kF16, kD, kHkv, kRows), "v_cache");
    std::vector<int32_t> slots(kT);
    std::iota(slots.begin(), slots.end(), 5);
    const NodeId sl = c.ints(slots, "slots");
    const NodeId kw = c.op(OpKind::kCacheWrite, {k_state, k, sl});
    const NodeId vw = c.op(OpKind::kCacheWrite, {v_state, v, sl});
    // Keys: slots 0..7 at positions 0..7 in a shuffled row order, plus two empty slots.
    std::vector<int32_t> rows = {3, 0, 7, 5, 1, 9, 6, 2, 4, 12};
    std::vector<int32_t> kpos = {3, 0, 7, 5, 1, -1, 6, 2, 4, -1};
    OpParams ap;
    ap.attn.scale = 0.17f;
    attn =
        c.op(OpKind::kAttention,
             {q, kw, vw, c.ints(pos, "q_pos"), c.ints(kpos, "k_pos"), c.ints(rows, "k_rows")}, ap);
    const NodeId o =
        c.op(OpKind::kMatMul, {c.weight(GgmlType::kQ5_0, kD * kHq, kE),
                               c.op(OpKind::kReshape, {attn}, reshape_to(kD * kHq, kT))});
    OpParams glu;
    glu.glu = graph::GluActivation::kGeluTanh;
    out = c.op(OpKind::kAdd, {c.op(OpKind::kGlu, {o, x}, glu), x});
    k_host = cache_bytes(11);
    v_host = cache_bytes(12);
  }

  static std::vector<uint8_t> cache_bytes(uint32_t seed) {
    const auto f = quant::testing::gaussian(sz(kD * kHkv * kRows), 1.0f, seed);
    std::vector<uint8_t> b(f.size() * 2);
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t h = fp32_to_fp16(f[i]);
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
    return b;
  }

  // Runs the reference on copies of the KV bytes and the backend on k_host / v_host (bound at
  // their current address); returns the output NMSE and checks the caches match.
  double run_both(Backend& backend) {
    std::vector<uint8_t> k_ref = k_host, v_ref = v_host;
    const size_t n = sz(c.g.node(out).desc.nelements());
    std::vector<float> ref(n), got(n);
    c.b.bind_state(k_state, GgmlType::kF16, k_ref);
    c.b.bind_state(v_state, GgmlType::kF16, v_ref);
    c.b.bind_output(out, ref);
    Status s = graph::run_reference(c.g, c.b);
    EXPECT_TRUE(s.ok()) << s.to_string();
    c.b.bind_state(k_state, GgmlType::kF16, k_host);
    c.b.bind_state(v_state, GgmlType::kF16, v_host);
    c.b.bind_output(out, got);
    s = backend.run(c.g, c.b);
    EXPECT_TRUE(s.ok()) << s.to_string();
    expect_same_cache(k_host, k_ref);
    expect_same_cache(v_host, v_ref);
    return nmse(got, ref);
  }

  // Rows the batch did not write are untouched (byte-equal); the written rows (slots 5..) hold
  // the batch's K / V, which differ from the reference's only by the matmul's rounding.
  static void expect_same_cache(const std::vector<uint8_t>& got, const std::vector<uint8_t>& ref) {
    const size_t row = kD * kHkv * 2;
    ASSERT_EQ(got.size(), ref.size());
    std::vector<float> gw, rw;
    for (size_t r = 0; r < kRows; ++r) {
      const bool written = r >= 5 && r < 5 + kT;
      for (size_t i = r * row; i < (r + 1) * row; i += 2) {
        uint16_t a, b;
        std::memcpy(&a, got.data() + i, 2);
        std::memcpy(&b, ref.data() + i, 2);
        if (!written) {
          ASSERT_EQ(a, b) << "row " << r << " changed";
        } else {
          gw.push_back(fp16_to_fp32(a));
          rw.push_back(fp16_to_fp32(b));
        }
      }
    }
    EXPECT_LE(nmse(gw, rw), 1e-4);
  }
};

std::unique_ptr<Backend> make(OpenclBackendOptions o) {
  auto b = make_opencl_backend(o);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(*b) : nullptr;
}

TEST(OpenclGraph, PrepareUploadsTheWeightsAheadOfTheRun) {
  // What the scheduler does for the next stage while another unit runs the current one.
  OpenclBackendOptions o;
  o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
  auto b = make(o);
  ASSERT_NE(b, nullptr);
  LayerGraph lg;
  graph::Bindings prep = lg.c.b;
  prep.bind_state(lg.k_state, GgmlType::kF16, lg.k_host);
  prep.bind_state(lg.v_state, GgmlType::kF16, lg.v_host);
  ASSERT_TRUE(b->prepare(lg.c.g, prep).ok());
  const OpenclStats s1 = *opencl_stats(*b);
  EXPECT_GT(s1.weight_uploads, 0u);
  EXPECT_EQ(s1.runs, 0u) << "prepare runs nothing";
  EXPECT_LE(lg.run_both(*b), 1e-3);
  const OpenclStats s2 = *opencl_stats(*b);
  EXPECT_EQ(s2.weight_uploads, s1.weight_uploads) << "the run found every weight on the device";
  EXPECT_EQ(s2.runs, 1u);
}

TEST(OpenclGraph, HostStateIsTheTruthAndWeightsUploadOnce) {
  Backend& b = shared_backend();
  LayerGraph lg;
  EXPECT_LE(lg.run_both(b), 1e-3);
  const OpenclStats s1 = *opencl_stats(b);
  EXPECT_GT(s1.last_bytes_uploaded, 0u);
  EXPECT_GT(s1.last_bytes_downloaded, 0u);
  EXPECT_GT(s1.last_device_ms, 0.0);  // profiling events
  EXPECT_GT(s1.kernels, 0u);
  EXPECT_GT(s1.device_bytes_in_use, s1.weight_bytes_uploaded);

  // The host changes rows the attention reads (e.g. another sequence's prefix was paged in),
  // and the cache moves to another address (spill / paged pool).
  lg.k_host = LayerGraph::cache_bytes(21);
  lg.v_host = LayerGraph::cache_bytes(22);
  EXPECT_LE(lg.run_both(b), 1e-3);
  const OpenclStats s2 = *opencl_stats(b);
  EXPECT_EQ(s2.weight_uploads, s1.weight_uploads);  // weights stayed on the device
  EXPECT_EQ(s2.weight_bytes_uploaded, s1.weight_bytes_uploaded);
  EXPECT_LT(s2.last_bytes_uploaded, s1.last_bytes_uploaded);
  EXPECT_EQ(s2.runs, s1.runs + 1);
  EXPECT_GE(s2.device_ms, s1.device_ms);

  // A hook right before the attention rewrites a cached row: both executors must see it.
  std::vector<uint8_t>* target = nullptr;
  lg.c.b.add_hook(lg.attn, [&]() -> Status {
    for (size_t i = 0; i < LayerGraph::kD; ++i) {  // row 3 of the K cache (position 3)
      const uint16_t h = fp32_to_fp16(0.05f * static_cast<float>(i));
      std::memcpy(target->data() + (3 * LayerGraph::kD + i) * 2, &h, 2);
    }
    return {};
  });
  // run_both binds k_ref first, then k_host; point the hook at whichever is bound.
  std::vector<uint8_t> k_ref = lg.k_host, v_ref = lg.v_host;
  const size_t n = sz(lg.c.g.node(lg.out).desc.nelements());
  std::vector<float> ref(n), got(n);
  target = &k_ref;
  lg.c.b.bind_state(lg.k_state, GgmlType::kF16, k_ref);
  lg.c.b.bind_state(lg.v_state, GgmlType::kF16, v_ref);
  lg.c.b.bind_output(lg.out, ref);
  ASSERT_TRUE(graph::run_reference(lg.c.g, lg.c.b).ok());
  target = &lg.k_host;
  lg.c.b.bind_state(lg.k_state, GgmlType::kF16, lg.k_host);
  lg.c.b.bind_state(lg.v_state, GgmlType::kF16, lg.v_host);
  lg.c.b.bind_output(lg.out, got);
  const Status s = b.run(lg.c.g, lg.c.b);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_LE(nmse(got, ref), 1e-3);
  LayerGraph::expect_same_cache(lg.k_host, k_ref);
}

TEST(OpenclGraph, ProgramCacheHitAndCorruptFileIsRebuilt) {
  const std::string dir = fresh_cache_dir("cache_test");
  OpenclBackendOptions o;
  o.program_cache_dir = dir;
  auto first = make(o);
  ASSERT_TRUE(first);
  EXPECT_FALSE(opencl_stats(*first)->program_from_cache);
  EXPECT_TRUE(opencl_stats(*first)->program_cache_written);
  first.reset();
  auto second = make(o);
  ASSERT_TRUE(second);
  EXPECT_TRUE(opencl_stats(*second)->program_from_cache);
  second.reset();

  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.write("garbage!", 8);  // damage the payload
  }
  EXPECT_EQ(files, 1u);
  auto third = make(o);
  ASSERT_TRUE(third);
  EXPECT_FALSE(opencl_stats(*third)->program_from_cache);
  EXPECT_TRUE(opencl_stats(*third)->program_cache_written);
  Problem c;  // and it runs
  const NodeId y = c.op(OpKind::kSilu, {c.input({40, 3, 1, 1})});
  EXPECT_LE(compare(c, y, "silu after a corrupt cache", *third), 1e-5);
  third.reset();
  auto fourth = make(o);
  ASSERT_TRUE(fourth);
  EXPECT_TRUE(opencl_stats(*fourth)->program_from_cache);
}

TEST(OpenclGraph, DisabledOpsAreUnsupportedAndTheBackendStaysUsable) {
  OpenclBackendOptions o;
  o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
  o.disabled_ops = {OpKind::kGlu};
  auto b = make(o);
  ASSERT_TRUE(b);
  Problem c;
  const NodeId x = c.input({16, 2, 1, 1});
  const NodeId g = c.op(OpKind::kGlu, {x, x});
  const OpSupport s = b->supports(c.g, g);
  EXPECT_EQ(s.level, Support::kUnsupported);
  EXPECT_EQ(s.reason, "disabled by options");
  std::vector<float> out(32);
  c.b.bind_output(g, out);
  const Status st = b->run(c.g, c.b);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("disabled by options"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("node " + std::to_string(g)), std::string::npos) << st.message();
  Problem ok;
  const NodeId y = ok.op(OpKind::kGelu, {ok.input({16, 2, 1, 1})});
  EXPECT_LE(compare(ok, y, "gelu after a disabled op", *b), 1e-5);
}

TEST(OpenclGraph, MemoryLimitIsResourceExhaustedAndTheBackendStaysUsable) {
  OpenclBackendOptions o;
  o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
  o.memory_limit_bytes = 1 << 20;
  auto b = make(o);
  ASSERT_TRUE(b);
  Problem big;  // a 2 MiB F32 weight
  const NodeId y =
      big.op(OpKind::kMatMul, {big.weight(GgmlType::kF32, 512, 1024), big.input({512, 1, 1, 1})});
  std::vector<float> out(1024);
  big.b.bind_output(y, out);
  const Status s = b->run(big.g, big.b);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("memory limit"), std::string::npos) << s.message();
  EXPECT_LE(opencl_stats(*b)->device_bytes_in_use, o.memory_limit_bytes);
  Problem small;
  const NodeId z = small.op(OpKind::kMatMul,
                            {small.weight(GgmlType::kQ8_0, 64, 32), small.input({64, 3, 1, 1})});
  EXPECT_LE(compare(small, z, "matmul after running out of memory", *b), 1e-3);
  // Two graphs whose buffers (512 KiB each) do not fit together: the older plan is dropped.
  for (int i = 0; i < 2; ++i) {
    Problem c;
    const NodeId y2 = c.op(OpKind::kSilu, {c.input({64 * 1024, 1, 1, 1})});
    EXPECT_LE(compare(c, y2, "silu 256 KiB, plan " + std::to_string(i), *b), 1e-5);
    EXPECT_LE(opencl_stats(*b)->device_bytes_in_use, o.memory_limit_bytes);
  }
}

TEST(OpenclGraph, BadBindingsAreInvalidArgumentsNamingTheNode) {
  Backend& b = shared_backend();
  Problem c;
  const NodeId x = c.input({8, 2, 1, 1});
  const NodeId lonely = c.g.add_input(graph::make_desc(GgmlType::kF32, 8, 2), "unbound");
  const NodeId y = c.op(OpKind::kAdd, {x, lonely});
  std::vector<float> out(16), short_out(3);
  c.b.bind_output(y, out);
  Status s = b.run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'unbound'"), std::string::npos) << s.message();
  std::vector<float> data(16, 1.0f);
  c.b.bind_input(lonely, std::span<const float>(data));
  c.b.bind_output(y, short_out);
  s = b.run(c.g, c.b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output buffer"), std::string::npos) << s.message();
  c.b.bind_output(y, out);
  EXPECT_TRUE(b.run(c.g, c.b).ok());  // still usable
}

TEST(OpenclGraph, DeviceSelection) {
  auto devices = list_opencl_devices();
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  ASSERT_FALSE(devices->empty());
  for (const auto& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.global_mem_bytes, 0u);
  }
  OpenclBackendOptions o;
  o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
  o.device_filter = "no-such-device-anywhere";
  auto none = make_opencl_backend(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no-such-device-anywhere"), std::string::npos);
  // A case-insensitive piece of the first device's name selects it.
  std::string piece = devices->front().name.substr(0, 6);
  for (char& ch : piece) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  o.device_filter = piece;
  auto one = make(o);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->name(), "opencl(" + devices->front().name + ")");
  EXPECT_EQ(one->kind(), DeviceKind::kGpu);
}

}  // namespace
}  // namespace geniex::backends::opencl_test
