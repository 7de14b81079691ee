#include "engine/backend_set.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "backends/cpu/cpu_backend.h"
#if GENIEX_HAVE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#include "backends/npu/npu_backend.h"

namespace geniex::engine {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

#if GENIEX_HAVE_OPENCL
// True when the ICD loader's vendor folder ($OCL_ICD_VENDORS or /etc/OpenCL/vendors) lists no
// driver, or only PoCL (which runs kernels on the CPU).
bool only_cpu_opencl_drivers() {
  std::string dir = env("OCL_ICD_VENDORS");
  if (dir.empty()) dir = "/etc/OpenCL/vendors";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return false;  // a file or unusual setup: ask
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".icd") continue;
    std::ifstream in(e.path());
    std::string lib;
    std::getline(in, lib);
    std::transform(lib.begin(), lib.end(), lib.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lib.find("pocl") == std::string::npos) return false;
  }
  return true;
}

// "Rope,Attention" -> the op kinds; unknown names are an error naming them.
Result<std::set<graph::OpKind>> parse_ops(const std::string& list) {
  std::set<graph::OpKind> out;
  size_t pos = 0;
  while (pos <= list.size() && !list.empty()) {
    const size_t comma = list.find(',', pos);
    const std::string name =
        list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    bool found = false;
    for (int k = 0; k <= static_cast<int>(graph::OpKind::kCacheWrite); ++k) {
      const auto kind = static_cast<graph::OpKind>(k);
      if (graph::op_name(kind) == name) {
        out.insert(kind);
        found = true;
      }
    }
    if (!found) return invalid_argument("GENIEX_OPENCL_DISABLE: unknown op '" + name + "'");
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// The OpenCL unit, or nothing (with a log line) when there is none usable.
Result<std::unique_ptr<backends::Backend>> opencl_unit(bool any_type, const BackendSetOptions& o) {
  backends::OpenclBackendOptions co;
  co.device_filter = env("GENIEX_OPENCL_DEVICE");
  GENIEX_ASSIGN_OR_RETURN(co.disabled_ops, parse_ops(env("GENIEX_OPENCL_DISABLE")));
  if (const std::string lim = env("GENIEX_OPENCL_MEMORY_LIMIT"); !lim.empty()) {
    char* end = nullptr;
    co.memory_limit_bytes = std::strtoull(lim.c_str(), &end, 10);
    if (*end != '\0' || co.memory_limit_bytes == 0 || lim[0] == '-') {
      return invalid_argument("GENIEX_OPENCL_MEMORY_LIMIT: '" + lim + "' is not a byte count");
    }
  }
  if (!any_type && co.device_filter.empty()) {
    // Only real GPUs unless pinned: a CPU OpenCL driver is slower than our own CPU kernels.
    // Loading one just to ask costs ~60 MiB (PoCL brings LLVM): skip when every installed ICD
    // is PoCL.
    if (only_cpu_opencl_drivers()) {
      if (o.log) o.log("gpu: only CPU OpenCL drivers are installed (pin --device gpu to use them)");
      return std::unique_ptr<backends::Backend>();
    }
    auto devs = backends::list_opencl_devices();
    bool gpu = false;
    if (devs.ok()) {
      for (const auto& d : *devs) gpu = gpu || d.is_gpu;
    }
    if (!gpu) {
      if (o.log) o.log("gpu: no OpenCL GPU device (pin --device gpu to use other OpenCL devices)");
      return std::unique_ptr<backends::Backend>();
    }
  }
  auto b = backends::make_opencl_backend(co);
  if (!b.ok()) {
    if (o.log) o.log("gpu: " + b.status().message());
    return std::unique_ptr<backends::Backend>();
  }
  return std::move(*b);
}
#endif

}  // namespace

Result<std::vector<std::unique_ptr<backends::Backend>>> make_backends(const BackendSetOptions& o) {
  std::vector<std::unique_ptr<backends::Backend>> list;
  const Device::Kind kind = o.device.kind();
  if (kind == Device::Kind::kNpu || kind == Device::Kind::kAuto) {
    backends::NpuOptions no;
    no.plugin_dir = o.plugin_dir;
    no.config = o.npu_config;
    std::vector<std::string> notes;
    no.notes = &notes;
    auto npus = backends::make_npu_backends(no);
    if (!npus.ok()) return npus.status();
    for (const auto& n : notes) {
      if (o.log) o.log("npu: " + n);
    }
    for (auto& b : *npus) {
      // The reference plugin computes on the host: a conformance target, never picked by auto.
      if (kind == Device::Kind::kAuto && b->name().rfind("npu(ref:", 0) == 0) continue;
      list.push_back(std::move(b));
    }
  }
#if GENIEX_HAVE_OPENCL
  if (kind != Device::Kind::kCpu) {
    GENIEX_ASSIGN_OR_RETURN(auto gpu, opencl_unit(kind == Device::Kind::kGpu, o));
    if (gpu) list.push_back(std::move(gpu));
  }
#else
  if (kind == Device::Kind::kGpu && o.log) o.log("gpu: this build has no OpenCL backend");
#endif
  backends::CpuBackendOptions cpu_opts;
  cpu_opts.n_threads = o.n_threads;
  cpu_opts.batch_invariant = o.deterministic;
  GENIEX_ASSIGN_OR_RETURN(auto cpu, backends::make_cpu_backend(cpu_opts));
  list.push_back(std::move(cpu));
  return list;
}

}  // namespace geniex::engine
