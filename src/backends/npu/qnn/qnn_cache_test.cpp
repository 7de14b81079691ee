// The QNN HTP plugin's context-binary cache, through the plugin's own C++ (so finalizes and
// cache hits can be counted): a second compile of the same graph restores the context without
// a finalize and computes the same bits; a flipped byte, a truncated file and another graph's
// entry are each reported and rebuilt, never trusted; the key follows weights and target.
// Skipped only when the runtime is absent AND setup did not install it (qnn_test_env.h).
#include "backends/npu/qnn/qnn_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/npu/qnn/qnn_plugin.h"
#include "backends/npu/qnn/qnn_test_env.h"
#include "core/dtype.h"

namespace geniex::npu_qnn {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kF32 = static_cast<uint32_t>(GgmlType::kF32);

// y = rms_norm(W x + b) over 128 tokens: x [256, 128] input, W [256, 96], b [96].
struct SmallGraph {
  std::vector<float> w, b, x;
  std::vector<geniex_npu_tensor> tensors;
  std::vector<geniex_npu_op> ops;
  uint32_t out_id = 5;
  geniex_npu_graph g{};

  explicit SmallGraph(float w_scale = 1.0f) {
    std::mt19937 rng(11);
    std::normal_distribution<float> n(0.0f, 1.0f);
    w.resize(256 * 96);
    b.resize(96);
    x.resize(256 * 128);
    for (float& v : w) v = n(rng) * 0.05f * w_scale;
    for (float& v : b) v = n(rng);
    for (float& v : x) v = n(rng);
    auto t = [](uint32_t id, uint32_t role, int64_t n0, int64_t n1, const void* data,
                uint64_t bytes) {
      geniex_npu_tensor r{};
      r.id = id;
      r.dtype = kF32;
      r.ne[0] = n0;
      r.ne[1] = n1;
      r.ne[2] = r.ne[3] = 1;
      r.role = role;
      r.name = "";
      r.data = data;
      r.data_bytes = bytes;
      return r;
    };
    tensors = {t(0, GENIEX_NPU_TENSOR_INPUT, 256, 128, nullptr, 0),
               t(1, GENIEX_NPU_TENSOR_WEIGHT, 256, 96, w.data(), w.size() * 4),
               t(2, GENIEX_NPU_TENSOR_WEIGHT, 96, 1, b.data(), b.size() * 4),
               t(3, GENIEX_NPU_TENSOR_OP, 96, 128, nullptr, 0),
               t(4, GENIEX_NPU_TENSOR_OP, 96, 128, nullptr, 0),
               t(5, GENIEX_NPU_TENSOR_OP, 96, 128, nullptr, 0)};
    auto op = [](uint32_t kind, uint32_t out, std::vector<uint32_t> in) {
      geniex_npu_op o{};
      o.kind = kind;
      o.output = out;
      o.n_inputs = static_cast<uint32_t>(in.size());
      for (size_t i = 0; i < in.size(); ++i) o.inputs[i] = in[i];
      o.params.eps = 1e-6f;
      return o;
    };
    ops = {op(GENIEX_NPU_OP_MATMUL, 3, {1, 0}), op(GENIEX_NPU_OP_ADD, 4, {3, 2}),
           op(GENIEX_NPU_OP_RMS_NORM, 5, {4})};
    g.struct_size = sizeof(g);
    g.batch_tokens = 128;
    g.n_tensors = static_cast<uint32_t>(tensors.size());
    g.tensors = tensors.data();
    g.n_ops = static_cast<uint32_t>(ops.size());
    g.ops = ops.data();
    g.n_outputs = 1;
    g.outputs = &out_id;
  }
};

class QnnCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto env = testing::qnn_test_env();
    if (const std::string why = env.skip_reason(); !why.empty()) GTEST_SKIP() << why;
    // One folder per test and process (ctest runs the cases in parallel).
    dir_ = fs::path(::testing::TempDir()) /
           ("geniex_qnn_cache_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    auto d = open_device(("cache_dir=" + dir_.string()).c_str());
    ASSERT_TRUE(d.ok()) << d.status().to_string() << " [" << env.context() << "]";
    dev_ = std::move(*d);
  }
  void TearDown() override {
    if (dev_ != nullptr) fs::remove_all(dir_);
  }

  // Compiles, runs once, releases; the output and the compile time.
  std::vector<float> run(const SmallGraph& sg, double* compile_ms = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    auto c = compile_graph(*dev_, sg.g);
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (!c.ok()) return {};
    if (compile_ms != nullptr) {
      *compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    }
    std::vector<float> out(96 * 128);
    std::vector<float> x = sg.x;
    const geniex_npu_buffer bufs[] = {{0, x.data(), x.size() * 4}, {5, out.data(), out.size() * 4}};
    const Status s = execute_graph(*dev_, **c, bufs, 2);
    EXPECT_TRUE(s.ok()) << s.to_string();
    release_graph(*dev_, **c);
    return out;
  }

  fs::path only_entry() const {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path());
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? fs::path() : files[0];
  }

  fs::path dir_;
  std::unique_ptr<Device> dev_;
};

TEST_F(QnnCache, ASecondCompileRestoresWithoutFinalizeAndSameBits) {
  SmallGraph sg;
  double prepare_ms = 0, load_ms = 0;
  const auto first = run(sg, &prepare_ms);
  EXPECT_EQ(dev_->finalizes, 1u);
  EXPECT_EQ(dev_->cache.written, 1u);
  const fs::path entry = only_entry();
  const auto second = run(sg, &load_ms);
  EXPECT_EQ(dev_->finalizes, 1u) << "the second compile prepared the graph again";
  EXPECT_EQ(dev_->cache.hits, 1u);
  EXPECT_EQ(first, second);
  std::printf(
      "[ measure ] [256x96] FullyConnected + Add + RmsNorm, 128 tokens: prepare %.1f ms, cache "
      "load %.1f ms, entry %ju bytes\n",
      prepare_ms, load_ms, static_cast<uintmax_t>(fs::file_size(entry)));
  // Other weights or another target: another key.
  SmallGraph other(2.0f);
  EXPECT_NE(graph_key(sg.g, dev_->identity), graph_key(other.g, dev_->identity));
  EXPECT_NE(graph_key(sg.g, dev_->identity), graph_key(sg.g, dev_->identity + " v75"));
}

TEST_F(QnnCache, ACorruptTruncatedOrForeignEntryIsReportedAndRebuilt) {
  SmallGraph sg;
  const auto good = run(sg);
  const fs::path entry = only_entry();
  const auto size = fs::file_size(entry);
  struct Case {
    const char* what;
    const char* expect;
  };
  for (const Case& k : {Case{"flipped byte", "checksum mismatch"}, Case{"truncated", "truncated"},
                        Case{"foreign", "another graph"}}) {
    SCOPED_TRACE(k.what);
    const std::string what = k.what;
    if (what == "flipped byte") {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(size / 2));
      char c = 0;
      f.read(&c, 1);
      c = static_cast<char>(c ^ 0x5A);
      f.seekp(static_cast<std::streamoff>(size / 2));
      f.write(&c, 1);
    } else if (what == "truncated") {
      fs::resize_file(entry, size - 100);
    } else {  // another graph's entry under this name
      SmallGraph other(2.0f);
      auto d2 = open_device(("cache_dir=" + (dir_ / "other").string()).c_str());
      ASSERT_TRUE(d2.ok());
      auto c = compile_graph(**d2, other.g);
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      release_graph(**d2, **c);
      fs::path theirs;
      for (const auto& e : fs::directory_iterator(dir_ / "other")) theirs = e.path();
      fs::copy_file(theirs, entry, fs::copy_options::overwrite_existing);
      fs::remove_all(dir_ / "other");
    }
    const uint64_t finalizes = dev_->finalizes, rejected = dev_->cache.rejected;
    const auto rebuilt = run(sg);
    EXPECT_EQ(dev_->cache.rejected, rejected + 1);
    EXPECT_EQ(dev_->finalizes, finalizes + 1);  // prepared again
    EXPECT_NE(dev_->cache.last_note.find(k.expect), std::string::npos) << dev_->cache.last_note;
    EXPECT_NE(dev_->cache.last_note.find("rebuilding"), std::string::npos);
    EXPECT_EQ(rebuilt, good);
    // ... and the rewritten entry serves the next compile.
    const uint64_t hits = dev_->cache.hits;
    EXPECT_EQ(run(sg), good);
    EXPECT_EQ(dev_->cache.hits, hits + 1);
  }
}

TEST_F(QnnCache, PastCacheMaxTheLeastRecentlyUsedEntriesGo) {
  auto d = open_device(("cache_dir=" + dir_.string() + ";cache_max=150K").c_str());
  ASSERT_TRUE(d.ok());
  SmallGraph a(1.0f), b(2.0f);  // ~100 KB each: the second write removes the first
  for (const SmallGraph* g : {&a, &b}) {
    auto c = compile_graph(**d, g->g);
    ASSERT_TRUE(c.ok());
    release_graph(**d, **c);
  }
  EXPECT_EQ((*d)->cache.written, 2u);
  EXPECT_EQ((*d)->cache.pruned, 1u);
  EXPECT_TRUE(fs::exists(dir_ / (key_text(graph_key(b.g, (*d)->identity)) + ".qnnctx")));
  EXPECT_FALSE(fs::exists(dir_ / (key_text(graph_key(a.g, (*d)->identity)) + ".qnnctx")));
}

TEST_F(QnnCache, OffWritesNothing) {
  auto d = open_device("cache_dir=none");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE((*d)->cache_dir.empty());
  SmallGraph sg;
  auto c = compile_graph(**d, sg.g);
  ASSERT_TRUE(c.ok());
  release_graph(**d, **c);
  EXPECT_EQ((*d)->cache.written, 0u);
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace geniex::npu_qnn
