// Loading NPU plugins: dlopen (RTLD_LOCAL) of a libgeniex_npu_*.so, checks of its C function
// table (include/geniex/npu_plugin.h), opening its device and reading its capabilities.
// Every refusal is a Status that names the file and the defect.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "geniex/npu_plugin.h"

namespace geniex::backends::npu {

/// A plugin's capabilities, copied out of its geniex_npu_caps.
struct NpuCaps {
  std::string device_name;
  uint64_t memory_bytes = 0;
  /// dtype mask per op kind (index: geniex_npu_op_kind); 0 = kind unsupported.
  std::vector<uint64_t> op_dtype_masks = std::vector<uint64_t>(GENIEX_NPU_OP_COUNT, 0);
  std::vector<int32_t> batch_tokens;  ///< allowed token counts per execute
  uint64_t weight_dtype_mask = 0;     ///< accepted weight formats (bit per GGUF type id)

  /// True when `kind` is supported with a typed input of GGUF type id `dtype`.
  [[nodiscard]] bool accepts(uint32_t kind, uint32_t dtype) const;
  /// "{1, 128}".
  [[nodiscard]] std::string batch_tokens_text() const;
};

/// A loaded plugin with one open device. Destruction destroys the device, then dlcloses.
/// Not copyable; every compiled handle of the device must be released first.
class LoadedNpuPlugin {
 public:
  /// Loads `path`, checks the table (ABI version, struct_size, mandatory functions), opens a
  /// device with its part of `config` (may be empty; config_for_plugin: unscoped items and
  /// items scoped `NAME:` with the plugin's name) and reads its caps.
  static Result<std::unique_ptr<LoadedNpuPlugin>> open(const std::filesystem::path& path,
                                                       const std::string& config = {});
  ~LoadedNpuPlugin();
  LoadedNpuPlugin(const LoadedNpuPlugin&) = delete;
  LoadedNpuPlugin& operator=(const LoadedNpuPlugin&) = delete;

  /// The plugin's function table (valid while this object lives).
  [[nodiscard]] const geniex_npu_plugin_v1& api() const { return *api_; }
  /// The open device.
  [[nodiscard]] geniex_npu_device* device() const { return device_; }
  /// Capabilities read at open.
  [[nodiscard]] const NpuCaps& caps() const { return caps_; }
  /// The file it came from.
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// The plugin's name from its table, e.g. "ref".
  [[nodiscard]] const std::string& name() const { return name_; }
  /// The plugin's version text.
  [[nodiscard]] const std::string& version() const { return version_; }

 private:
  LoadedNpuPlugin() = default;
  struct DlClose {
    void operator()(void* h) const;
  };
  std::unique_ptr<void, DlClose> lib_;
  const geniex_npu_plugin_v1* api_ = nullptr;
  geniex_npu_device* device_ = nullptr;
  NpuCaps caps_;
  std::filesystem::path path_;
  std::string name_;
  std::string version_;
};

/// The files named libgeniex_npu_*.so in `dir`, sorted by name (empty when `dir` is missing).
std::vector<std::filesystem::path> discover_npu_plugins(const std::filesystem::path& dir);

/// Where plugins are looked for when no folder is given: $GENIEX_PLUGIN_DIR if set, else
/// `<dir of /proc/self/exe>/../plugins` and `<dir of /proc/self/exe>/plugins` (the build tree),
/// then `<dir of /proc/self/exe>/../lib/geniex/plugins` and, in a program using libgeniex.so,
/// `<dir of libgeniex.so>/geniex/plugins` (an installed tree).
std::vector<std::filesystem::path> default_plugin_dirs();

/// Plugins that opened, and one note per file that did not (the refusal's message).
struct LoadedNpuPlugins {
  std::vector<std::unique_ptr<LoadedNpuPlugin>> plugins;
  std::vector<std::string> notes;
};

/// Opens every plugin discover_npu_plugins finds in `dirs` (a file name is taken once, from the
/// first folder that has it). A bad plugin becomes a note and never stops the others.
LoadedNpuPlugins load_npu_plugins(const std::vector<std::filesystem::path>& dirs,
                                  const std::string& config = {});

}  // namespace geniex::backends::npu
