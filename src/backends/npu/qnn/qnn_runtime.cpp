// Loading Qualcomm's QNN runtime and opening an HTP device (qnn_runtime.h).
#include "backends/npu/qnn/qnn_runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace geniex::npu_qnn {
namespace {

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}
// The last error-level message QNN logged (its own words), consumed by qnn_error.
std::string& last_logged_error() {
  static std::string s;
  return s;
}

// Set when a device asked for more than errors (qnn_log_level >= 2): QNN's log goes to stderr.
std::atomic<bool>& echo_log() {
  static std::atomic<bool> on{false};
  return on;
}

void log_callback(const char* fmt, uint32_t level, uint64_t /*timestamp*/, va_list args) {
  if (fmt == nullptr) return;
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, args);
  std::string text(buf);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (echo_log().load()) std::fprintf(stderr, "[qnn] %s\n", text.c_str());
  if (level != api::kLogError) return;
  std::lock_guard<std::mutex> lock(log_mutex());
  last_logged_error() = std::move(text);
}

std::string not_found_hint() {
  return "; scripts/setup.sh installs it (PyPI onnxruntime-qnn==2.7.0 in .venv), or point the "
         "plugin at a QNN SDK's lib folder with the config key qnn_lib_dir= or "
         "GENIEX_QNN_LIB_DIR";
}

Result<std::unique_ptr<Runtime>> open_runtime(const std::filesystem::path& dir) {
  const auto htp = dir / "libQnnHtp.so";
  const auto system = dir / "libQnnSystem.so";
  std::error_code ec;
  for (const auto& f : {htp, system}) {
    if (!std::filesystem::is_regular_file(f, ec)) {
      return not_found("QNN runtime not found at " + dir.string() + " (no " +
                       f.filename().string() + ")" + not_found_hint());
    }
  }
  // RTLD_LOCAL: QNN's private libc++ (onnxruntime_qnn.libs) stays out of the global namespace.
  void* sys = dlopen(system.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (sys == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() +
                         ": libQnnSystem.so does not load: " + dlerror());
  }
  if (dlsym(sys, api::kSystemGetProvidersSymbol) == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() + ": libQnnSystem.so exports no " +
                         api::kSystemGetProvidersSymbol);
  }
  // libQnnHtp.so's emulator prints a banner (" # LIBNATIVE: ...") on stdout while it loads:
  // stdout is the generated text for the CLI, so the banner goes to stderr instead.
  std::fflush(stdout);
  const int saved_stdout = dup(1);
  if (saved_stdout >= 0) dup2(2, 1);
  void* lib = dlopen(htp.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::fflush(stdout);
  if (saved_stdout >= 0) {
    dup2(saved_stdout, 1);
    close(saved_stdout);
  }
  if (lib == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() +
                         ": libQnnHtp.so does not load: " + dlerror());
  }
  auto get = reinterpret_cast<api::GetProvidersFn>(dlsym(lib, api::kGetProvidersSymbol));
  if (get == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() + ": libQnnHtp.so exports no " +
                         api::kGetProvidersSymbol);
  }
  const api::Interface** providers = nullptr;
  uint32_t n = 0;
  if (const auto e = get(&providers, &n); e != api::kSuccess || providers == nullptr || n == 0) {
    return unimplemented("QNN runtime at " + dir.string() +
                         ": QnnInterface_getProviders returned no provider (error " +
                         std::to_string(api::error_code(e)) + ")");
  }
  auto rt = std::make_unique<Runtime>();
  rt->dir = dir;
  std::string seen;
  for (uint32_t i = 0; i < n; ++i) {
    const api::Interface* p = providers[i];
    if (p == nullptr) continue;
    if (!seen.empty()) seen += ", ";
    seen += std::string(p->provider_name ? p->provider_name : "?") + " core API " +
            version_text(p->api_version.core);
    if (p->api_version.core.major == api::kCoreApiMajor && rt->provider == nullptr) {
      rt->provider = p;
    }
  }
  if (rt->provider == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() + ": no provider speaks core API " +
                         std::to_string(api::kCoreApiMajor) +
                         ".x, which this plugin was written for (found: " + seen + ")");
  }
  const api::InterfaceTable& fn = rt->provider->fn;
  if (fn.backend_create == nullptr || fn.backend_free == nullptr || fn.device_create == nullptr ||
      fn.device_free == nullptr || fn.context_create == nullptr || fn.context_free == nullptr ||
      fn.graph_create == nullptr || fn.graph_add_node == nullptr || fn.graph_finalize == nullptr ||
      fn.graph_execute == nullptr || fn.tensor_create_graph_tensor == nullptr ||
      fn.log_create == nullptr || fn.log_free == nullptr) {
    return unimplemented("QNN runtime at " + dir.string() + ": provider " +
                         rt->provider->provider_name + " lacks a function this plugin needs");
  }
  // The table's order, checked: the API version read through it must be the provider's.
  if (fn.backend_get_api_version != nullptr) {
    api::ApiVersion v{};
    if (fn.backend_get_api_version(&v) != api::kSuccess ||
        v.core.major != rt->provider->api_version.core.major ||
        v.core.minor != rt->provider->api_version.core.minor) {
      return unimplemented("QNN runtime at " + dir.string() +
                           ": backendGetApiVersion disagrees with the provider (" +
                           version_text(v.core) + " vs " +
                           version_text(rt->provider->api_version.core) +
                           "): the interface table's layout is not the one we know");
    }
  }
  if (fn.backend_get_build_id != nullptr) {
    const char* id = nullptr;
    if (fn.backend_get_build_id(&id) == api::kSuccess && id != nullptr) rt->build_id = id;
  }
  return rt;
}

}  // namespace

std::string version_text(const api::Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

std::filesystem::path runtime_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("GENIEX_QNN_LIB_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return GENIEX_QNN_DEFAULT_LIB_DIR;
}

Result<const Runtime*> load_runtime(const std::filesystem::path& dir) {
  static std::mutex m;
  static std::map<std::filesystem::path, std::unique_ptr<Runtime>> loaded;  // never unloaded
  std::lock_guard<std::mutex> lock(m);
  const auto key = dir.lexically_normal();
  if (auto it = loaded.find(key); it != loaded.end()) return it->second.get();
  GENIEX_ASSIGN_OR_RETURN(auto rt, open_runtime(key));
  const Runtime* out = rt.get();
  loaded.emplace(key, std::move(rt));
  return out;
}

void clear_logged_error() {
  std::lock_guard<std::mutex> lock(log_mutex());
  last_logged_error().clear();
}

Status qnn_error(const std::string& what, api::ErrorHandle e) {
  std::string logged;
  {
    std::lock_guard<std::mutex> lock(log_mutex());
    logged.swap(last_logged_error());
  }
  const uint32_t code = api::error_code(e);
  std::string msg = what + " failed: QNN error " + std::to_string(code);
  if (!logged.empty()) msg += " (" + logged + ")";
  // QNN_COMMON_ERROR_MEM_ALLOC (1002) and the component MEM_ALLOC codes share that value.
  if (code == 1002) return resource_exhausted(msg);
  return unimplemented(msg);
}

Result<std::unique_ptr<HtpDevice>> HtpDevice::open(const Runtime& rt, uint32_t soc_model,
                                                   uint32_t arch, uint32_t log_level) {
  auto d = std::unique_ptr<HtpDevice>(new HtpDevice());
  d->rt_ = &rt;
  const api::InterfaceTable& fn = rt.provider->fn;
  clear_logged_error();
  if (log_level >= api::kLogWarn) echo_log().store(true);
  if (const auto e = fn.log_create(log_callback, log_level, &d->log_); e != api::kSuccess) {
    d->log_ = nullptr;  // go on without QNN's log
  }
  if (const auto e = fn.backend_create(d->log_, nullptr, &d->backend_); e != api::kSuccess) {
    d->backend_ = nullptr;
    return qnn_error("QnnBackend_create", e);
  }
  // The target SoC and Hexagon architecture, as HTP custom device configs.
  api::HtpDeviceCustomConfig soc{};
  soc.option = api::kHtpDeviceOptionSoc;
  soc.soc_model = soc_model;
  api::HtpDeviceCustomConfig target{};
  target.option = api::kHtpDeviceOptionArch;
  target.arch.device_id = 0;
  target.arch.arch = arch;
  api::DeviceConfig c_soc{0, &soc};
  api::DeviceConfig c_arch{0, &target};
  const api::DeviceConfig* configs[] = {&c_soc, &c_arch, nullptr};
  if (const auto e = fn.device_create(d->log_, configs, &d->device_); e != api::kSuccess) {
    d->device_ = nullptr;
    return qnn_error(
        "QnnDevice_create (SoC " + std::to_string(soc_model) + ", v" + std::to_string(arch) + ")",
        e);
  }
  return d;
}

HtpDevice::~HtpDevice() {
  const api::InterfaceTable& fn = rt_->provider->fn;
  if (device_ != nullptr) (void)fn.device_free(device_);
  if (backend_ != nullptr) (void)fn.backend_free(backend_);
  if (log_ != nullptr) (void)fn.log_free(log_);
}

}  // namespace geniex::npu_qnn
