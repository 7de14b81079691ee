// The plugin loader: each broken plugin is refused with a message naming the file and the
// defect; discovery in a folder with one good and several bad plugins yields the good one and
// one note per bad file.
#include "backends/npu/plugin_loader.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "backends/npu/npu_backend.h"
#include "backends/npu/plugin_config.h"

namespace geniex::backends::npu {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = GENIEX_NPU_TEST_PLUGIN_DIR;
const fs::path kRefPlugin = GENIEX_NPU_REF_PLUGIN;

// Expects `file` to be refused with `code` and a message naming the file and containing `defect`.
void expect_refused(const fs::path& file, StatusCode code, const std::string& defect) {
  auto p = LoadedNpuPlugin::open(file);
  ASSERT_FALSE(p.ok()) << file;
  EXPECT_EQ(p.status().code(), code) << p.status().to_string();
  EXPECT_NE(p.status().message().find(file.string()), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find(defect), std::string::npos) << p.status().message();
}

TEST(NpuPluginLoader, RefusesEachBrokenPlugin) {
  expect_refused(kBadDir / "libgeniex_npu_junk.so", StatusCode::kInvalidArgument,
                 "is not a loadable shared object");
  expect_refused(kBadDir / "libgeniex_npu_missing.so", StatusCode::kInvalidArgument,
                 "is not a loadable shared object");
  expect_refused(kBadDir / "libgeniex_npu_bad_no_symbol.so", StatusCode::kNotFound,
                 "does not export the entry symbol geniex_npu_plugin_get");
  expect_refused(kBadDir / "libgeniex_npu_bad_abi.so", StatusCode::kUnimplemented,
                 "has ABI version 99, this host speaks version 1");
  expect_refused(kBadDir / "libgeniex_npu_bad_size.so", StatusCode::kInvalidArgument,
                 "function table struct_size 8 is smaller than");
  expect_refused(kBadDir / "libgeniex_npu_bad_null_fn.so", StatusCode::kInvalidArgument,
                 "mandatory table entry 'execute' is NULL");
  expect_refused(kBadDir / "libgeniex_npu_bad_caps.so", StatusCode::kInternal,
                 "query_caps failed: no NPU device found");
}

TEST(NpuPluginLoader, OpensTheReferencePluginAndReadsItsCaps) {
  auto p = LoadedNpuPlugin::open(kRefPlugin);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const NpuCaps& caps = (*p)->caps();
  EXPECT_EQ((*p)->name(), "ref");
  EXPECT_EQ(caps.batch_tokens, (std::vector<int32_t>{1, 128}));
  EXPECT_EQ(caps.batch_tokens_text(), "{1, 128}");
  EXPECT_EQ(caps.memory_bytes, uint64_t{1} << 30);
  EXPECT_TRUE(caps.accepts(GENIEX_NPU_OP_MATMUL, static_cast<uint32_t>(GgmlType::kQ4_K)));
  EXPECT_TRUE(caps.accepts(GENIEX_NPU_OP_ATTENTION, static_cast<uint32_t>(GgmlType::kF16)));
  EXPECT_FALSE(caps.accepts(GENIEX_NPU_OP_ATTENTION, static_cast<uint32_t>(GgmlType::kQ8_0)));
  EXPECT_FALSE(caps.accepts(GENIEX_NPU_OP_EMBEDDING, 0));
  EXPECT_FALSE(caps.accepts(GENIEX_NPU_OP_SOFTCAP, 0));
}

TEST(NpuPluginLoader, ReferencePluginExportsOnlyItsEntryPoint) {
  void* h = dlopen(kRefPlugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  EXPECT_NE(dlsym(h, GENIEX_NPU_ENTRY_SYMBOL), nullptr);
  // GenieX code linked into the plugin stays hidden: it can never interpose on the host's copy.
  EXPECT_EQ(dlsym(h, "_ZN6geniex5quant14can_dequantizeENS_8GgmlTypeE"), nullptr);
  dlclose(h);
}

TEST(NpuPluginLoader, ConfigStringSetsTheMemoryCapAndBadKeysAreRefused) {
  auto p = LoadedNpuPlugin::open(kRefPlugin, "memory=64M");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->caps().memory_bytes, uint64_t{64} << 20);
  auto bad = LoadedNpuPlugin::open(kRefPlugin, "memroy=64M");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("create failed: unknown config key 'memroy'"),
            std::string::npos)
      << bad.status().message();
}

TEST(NpuPluginConfig, ScopedItemsGoOnlyToTheirPlugin) {
  const std::string config =
      "memory=2G;qnn-htp:soc_model=57;ref:fail_compile=1;qnn-htp:cache_dir=C:/x;;trace=1";
  EXPECT_EQ(config_for_plugin(config, "ref"), "memory=2G;fail_compile=1;trace=1");
  EXPECT_EQ(config_for_plugin(config, "qnn-htp"), "memory=2G;soc_model=57;cache_dir=C:/x;trace=1");
  EXPECT_EQ(config_for_plugin(config, "other"), "memory=2G;trace=1");
  // A ':' in the value is not a scope; spaces around a scope are allowed.
  EXPECT_EQ(config_for_plugin("cache_dir=/a:b; ref :memory=1G", "ref"), "cache_dir=/a:b;memory=1G");
  EXPECT_EQ(config_for_plugin("qnn-htp:soc_model=57", "ref"), "");
  EXPECT_EQ(config_for_plugin("", "ref"), "");
}

TEST(NpuPluginLoader, OneConfigStringServesEveryPlugin) {
  // Keys the reference plugin does not know, scoped to another plugin, no longer make it fail.
  auto p = LoadedNpuPlugin::open(kRefPlugin, "qnn-htp:soc_model=57;ref:memory=96M");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*p)->caps().memory_bytes, uint64_t{96} << 20);
  // Its own scope still checks its keys.
  auto bad = LoadedNpuPlugin::open(kRefPlugin, "ref:soc_model=57");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown config key 'soc_model'"), std::string::npos)
      << bad.status().message();
}

TEST(NpuPluginLoader, TheConfigStringIsTheOnlyRoute) {
  // The variables an earlier version read are ignored: only the config string sets the cap.
  ASSERT_EQ(setenv("GENIEX_NPU_REF_MEMORY", "3G", 1), 0);
  auto plain = LoadedNpuPlugin::open(kRefPlugin);
  auto configured = LoadedNpuPlugin::open(kRefPlugin, "memory=3G");
  unsetenv("GENIEX_NPU_REF_MEMORY");
  ASSERT_TRUE(plain.ok() && configured.ok());
  EXPECT_NE((*plain)->caps().memory_bytes, uint64_t{3} << 30);
  EXPECT_EQ((*configured)->caps().memory_bytes, uint64_t{3} << 30);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "geniex_npu_XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? fs::path(tmpl) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(NpuPluginLoader, DiscoveryReturnsTheGoodPluginAndNotesForTheBadOnes) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  fs::copy_file(kRefPlugin, dir.path() / "libgeniex_npu_ref.so");
  for (const char* bad : {"abi", "no_symbol", "null_fn"}) {
    const std::string name = std::string("libgeniex_npu_bad_") + bad + ".so";
    fs::copy_file(kBadDir / name, dir.path() / name);
  }
  fs::copy_file(kBadDir / "libgeniex_npu_junk.so", dir.path() / "libgeniex_npu_junk.so");
  std::ofstream(dir.path() / "libother.so") << "not a plugin name";
  std::ofstream(dir.path() / "libgeniex_npu_ref.so.txt") << "not a plugin name";

  const auto found = discover_npu_plugins(dir.path());
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found.front().filename(), "libgeniex_npu_bad_abi.so");  // sorted by name

  std::vector<std::string> notes;
  NpuOptions o;
  o.plugin_dir = dir.path();
  o.notes = &notes;
  auto backends = make_npu_backends(o);
  ASSERT_TRUE(backends.ok()) << backends.status().to_string();
  ASSERT_EQ(backends->size(), 1u);
  EXPECT_EQ((*backends)[0]->kind(), DeviceKind::kNpu);
  EXPECT_NE((*backends)[0]->name().find("ref"), std::string::npos);
  ASSERT_EQ(notes.size(), 4u);
  for (const char* file : {"libgeniex_npu_bad_abi.so", "libgeniex_npu_bad_no_symbol.so",
                           "libgeniex_npu_bad_null_fn.so", "libgeniex_npu_junk.so"}) {
    const bool named = std::any_of(notes.begin(), notes.end(), [&](const std::string& n) {
      return n.find(file) != std::string::npos;
    });
    EXPECT_TRUE(named) << file;
  }
}

TEST(NpuPluginLoader, MissingOrEmptyFolders) {
  NpuOptions o;
  o.plugin_dir = "/nonexistent/geniex/plugins";
  auto r = make_npu_backends(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/geniex/plugins"), std::string::npos);
  TempDir empty;
  o.plugin_dir = empty.path();
  auto none = make_npu_backends(o);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(NpuPluginLoader, DefaultFolders) {
  ASSERT_EQ(setenv("GENIEX_PLUGIN_DIR", GENIEX_NPU_PLUGIN_DIR, 1), 0);
  const auto dirs = default_plugin_dirs();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], fs::path(GENIEX_NPU_PLUGIN_DIR));
  auto backends = make_npu_backends();  // the environment's folder holds the reference plugin
  ASSERT_TRUE(backends.ok()) << backends.status().to_string();
  EXPECT_EQ(backends->size(), 1u);
  unsetenv("GENIEX_PLUGIN_DIR");
  const auto defaults = default_plugin_dirs();
  // <exe>/../plugins and <exe>/plugins (the build tree), <exe>/../lib/geniex/plugins (an
  // installed tree); the library-relative folder only where libgeniex.so is not the executable.
  ASSERT_EQ(defaults.size(), 3u);
  EXPECT_EQ(defaults[0].filename(), "plugins");
  EXPECT_EQ(defaults[1].filename(), "plugins");
  EXPECT_NE(defaults[0], defaults[1]);
  EXPECT_EQ(defaults[2].parent_path().filename(), "geniex");
  EXPECT_EQ(defaults[2].parent_path().parent_path().filename(), "lib");
}

}  // namespace
}  // namespace geniex::backends::npu
