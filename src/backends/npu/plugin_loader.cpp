#include "backends/npu/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <set>
#include <system_error>

#include "backends/npu/plugin_config.h"

namespace geniex::backends::npu {
namespace {

constexpr size_t kMsgSize = 512;

// The smallest table holding every mandatory field (create .. destroy).
constexpr size_t kMinTableSize = offsetof(geniex_npu_plugin_v1, alloc_buffer);

std::string quoted(const std::filesystem::path& p) { return "NPU plugin '" + p.string() + "'"; }

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown dlopen error");
}

// Copies and checks the caps a plugin reported.
Result<NpuCaps> copy_caps(const geniex_npu_caps& c) {
  NpuCaps caps;
  if (c.struct_size < sizeof(geniex_npu_caps)) {
    return invalid_argument("caps struct_size " + std::to_string(c.struct_size) + " < " +
                            std::to_string(sizeof(geniex_npu_caps)));
  }
  if ((c.n_ops > 0 && c.ops == nullptr) || (c.n_batch_tokens > 0 && c.batch_tokens == nullptr)) {
    return invalid_argument("caps list a count with a null array");
  }
  caps.device_name = c.device_name != nullptr ? c.device_name : "";
  caps.memory_bytes = c.memory_bytes;
  caps.weight_dtype_mask = c.weight_dtype_mask;
  for (uint32_t i = 0; i < c.n_ops; ++i) {
    if (c.ops[i].kind >= GENIEX_NPU_OP_COUNT) {
      return invalid_argument("caps name unknown op kind " + std::to_string(c.ops[i].kind));
    }
    caps.op_dtype_masks[c.ops[i].kind] = c.ops[i].dtype_mask;
  }
  caps.batch_tokens.assign(c.batch_tokens, c.batch_tokens + c.n_batch_tokens);
  return caps;
}

}  // namespace

bool NpuCaps::accepts(uint32_t kind, uint32_t dtype) const {
  return kind < op_dtype_masks.size() && dtype < 64 && ((op_dtype_masks[kind] >> dtype) & 1u);
}

std::string NpuCaps::batch_tokens_text() const {
  std::string s = "{";
  for (size_t i = 0; i < batch_tokens.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(batch_tokens[i]);
  }
  return s + "}";
}

void LoadedNpuPlugin::DlClose::operator()(void* h) const {
  if (h != nullptr) dlclose(h);
}

LoadedNpuPlugin::~LoadedNpuPlugin() {
  if (device_ != nullptr && api_ != nullptr) api_->destroy(device_);
}

Result<std::unique_ptr<LoadedNpuPlugin>> LoadedNpuPlugin::open(const std::filesystem::path& path,
                                                               const std::string& config) {
  std::unique_ptr<LoadedNpuPlugin> p(new LoadedNpuPlugin());
  p->path_ = path;
  dlerror();
  p->lib_.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!p->lib_) {
    return invalid_argument(quoted(path) + " is not a loadable shared object: " + dl_error());
  }
  dlerror();
  void* sym = dlsym(p->lib_.get(), GENIEX_NPU_ENTRY_SYMBOL);
  if (sym == nullptr) {
    return not_found(quoted(path) + " does not export the entry symbol " GENIEX_NPU_ENTRY_SYMBOL);
  }
  geniex_npu_get_fn get = nullptr;
  static_assert(sizeof(get) == sizeof(sym));
  std::copy_n(reinterpret_cast<const std::byte*>(&sym), sizeof(sym),
              reinterpret_cast<std::byte*>(&get));
  const geniex_npu_plugin_v1* api = get(GENIEX_NPU_ABI_VERSION);
  if (api == nullptr) {
    return unimplemented(quoted(path) + " refused host ABI version " +
                         std::to_string(GENIEX_NPU_ABI_VERSION) + " (entry point returned NULL)");
  }
  if (api->abi_version != GENIEX_NPU_ABI_VERSION) {
    return unimplemented(quoted(path) + " has ABI version " + std::to_string(api->abi_version) +
                         ", this host speaks version " + std::to_string(GENIEX_NPU_ABI_VERSION));
  }
  if (api->struct_size < kMinTableSize) {
    return invalid_argument(quoted(path) + ": function table struct_size " +
                            std::to_string(api->struct_size) + " is smaller than the " +
                            std::to_string(kMinTableSize) + " bytes of ABI version 1");
  }
  const std::array<std::pair<const char*, bool>, 8> mandatory = {{
      {"name", api->name != nullptr},
      {"version", api->version != nullptr},
      {"create", api->create != nullptr},
      {"query_caps", api->query_caps != nullptr},
      {"compile", api->compile != nullptr},
      {"execute", api->execute != nullptr},
      {"release", api->release != nullptr},
      {"destroy", api->destroy != nullptr},
  }};
  for (const auto& [field, present] : mandatory) {
    if (!present) {
      return invalid_argument(quoted(path) + ": mandatory table entry '" + field + "' is NULL");
    }
  }
  p->api_ = api;
  p->name_ = api->name;
  p->version_ = api->version;
  std::array<char, kMsgSize> msg{};
  geniex_npu_device* dev = nullptr;
  const std::string own = config_for_plugin(config, p->name_);
  if (api->create(own.empty() ? nullptr : own.c_str(), &dev, msg.data(), msg.size()) !=
          GENIEX_NPU_OK ||
      dev == nullptr) {
    msg.back() = '\0';
    return internal_error(quoted(path) + ": create failed: " + msg.data());
  }
  p->device_ = dev;
  geniex_npu_caps caps{};
  if (api->query_caps(dev, &caps, msg.data(), msg.size()) != GENIEX_NPU_OK) {
    msg.back() = '\0';
    return internal_error(quoted(path) + ": query_caps failed: " + msg.data());
  }
  auto copied = copy_caps(caps);
  if (!copied.ok()) {
    return invalid_argument(quoted(path) + ": bad caps: " + copied.status().message());
  }
  p->caps_ = std::move(copied).value();
  return p;
}

std::vector<std::filesystem::path> discover_npu_plugins(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return found;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    const bool match = name.starts_with("libgeniex_npu_") && name.ends_with(".so") &&
                       name.size() > std::string_view("libgeniex_npu_.so").size();
    if (match && !entry.is_directory(ec)) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::filesystem::path> default_plugin_dirs() {
  if (const char* env = std::getenv("GENIEX_PLUGIN_DIR"); env != nullptr && *env != '\0') {
    return {std::filesystem::path(env)};
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const auto dir = exe.parent_path();
  std::vector<std::filesystem::path> dirs = {(dir / ".." / "plugins").lexically_normal(),
                                             dir / "plugins"};
  // An installed tree (cmake --install): <prefix>/bin/geniex and <prefix>/lib/geniex/plugins,
  // and for a program linked with <prefix>/lib/libgeniex.so, the folder beside the library.
  dirs.push_back((dir / ".." / "lib" / "geniex" / "plugins").lexically_normal());
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_plugin_dirs), &info) != 0 &&
      info.dli_fname != nullptr) {
    const auto self = std::filesystem::weakly_canonical(info.dli_fname, ec);
    if (!ec && self != exe) dirs.push_back(self.parent_path() / "geniex" / "plugins");
  }
  return dirs;
}

LoadedNpuPlugins load_npu_plugins(const std::vector<std::filesystem::path>& dirs,
                                  const std::string& config) {
  LoadedNpuPlugins out;
  std::set<std::string> seen;
  for (const auto& dir : dirs) {
    for (const auto& file : discover_npu_plugins(dir)) {
      if (!seen.insert(file.filename().string()).second) continue;
      auto p = LoadedNpuPlugin::open(file, config);
      if (p.ok()) {
        out.plugins.push_back(std::move(p).value());
      } else {
        out.notes.push_back("skipped: " + p.status().message());
      }
    }
  }
  return out;
}

}  // namespace geniex::backends::npu
