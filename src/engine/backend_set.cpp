#include "engine/backend_set.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/gemv_tuning.h"
#include "backends/cpu/kernels/isa.h"
#if GENIEX_HAVE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#include "backends/npu/npu_backend.h"

namespace geniex::engine {
namespace {

#if GENIEX_HAVE_OPENCL
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

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

// Op names ("Rope", "Attention") -> the op kinds; unknown names are an error naming them.
Result<std::set<graph::OpKind>> parse_ops(const std::vector<std::string>& names) {
  std::set<graph::OpKind> out;
  for (const std::string& name : names) {
    bool found = false;
    for (int k = 0; k <= static_cast<int>(graph::kLastOpKind); ++k) {
      const auto kind = static_cast<graph::OpKind>(k);
      if (graph::op_name(kind) == name) {
        out.insert(kind);
        found = true;
      }
    }
    if (!found) return invalid_argument("OpenclTuning::disabled_ops: unknown op '" + name + "'");
  }
  return out;
}

// The OpenCL unit, or nothing (with a log line) when there is none usable.
Result<std::unique_ptr<backends::Backend>> opencl_unit(bool any_type, const BackendSetOptions& o) {
  backends::OpenclBackendOptions co;
  co.device_filter = o.tuning.opencl.device_filter;
  GENIEX_ASSIGN_OR_RETURN(co.disabled_ops, parse_ops(o.tuning.opencl.disabled_ops));
  co.memory_limit_bytes = o.tuning.opencl.memory_limit_bytes;
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
  if (const auto dev = backends::opencl_device(**b); dev && !dev->is_gpu && o.warnings) {
    // A CPU OpenCL driver (PoCL) emulates a GPU on this CPU: ~20x slower than our CPU kernels.
    o.warnings->push_back("--device gpu runs on the OpenCL device '" + dev->name + "' (" +
                          dev->platform +
                          "), a CPU driver, not a GPU: expect it to be many times slower than "
                          "--device cpu");
  }
  return std::move(*b);
}
#endif

// CpuTuning -> the CPU backend's options (an unknown ISA name is an error).
Result<backends::CpuBackendOptions> cpu_options(const BackendSetOptions& o) {
  const CpuTuning& t = o.tuning.cpu;
  backends::CpuBackendOptions c;
  c.n_threads = o.n_threads;
  c.batch_invariant = o.deterministic;
  // The process-wide fields get a value at every build, defaults included (CpuTuning).
  c.isa = t.isa.empty() ? cpu::cpu_isa() : cpu::parse_isa(t.isa);
  if (!c.isa) return invalid_argument("CpuTuning::isa: unknown SIMD level '" + t.isa + "'");
  switch (t.repack) {
    case CpuTuning::Repack::kDefault: c.repack = backends::CpuRepack::kDefault; break;
    case CpuTuning::Repack::kNone: c.repack = backends::CpuRepack::kNone; break;
    case CpuTuning::Repack::kAll: c.repack = backends::CpuRepack::kAll; break;
  }
  c.huge_pages = t.huge_pages;
  c.gemv_prefetch_bytes = t.gemv_prefetch_bytes >= 0
                              ? t.gemv_prefetch_bytes
                              : static_cast<int64_t>(cpu::default_gemv_prefetch_bytes());
  c.gemv_streams = t.gemv_streams > 0 ? t.gemv_streams : cpu::default_gemv_streams();
  return c;
}

}  // namespace

Result<std::vector<std::unique_ptr<backends::Backend>>> make_backends(const BackendSetOptions& o) {
  // The CPU options first: a bad name fails before any unit is made.
  GENIEX_ASSIGN_OR_RETURN(const backends::CpuBackendOptions cpu_opts, cpu_options(o));
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
  GENIEX_ASSIGN_OR_RETURN(auto cpu, backends::make_cpu_backend(cpu_opts));
  list.push_back(std::move(cpu));
  return list;
}

}  // namespace geniex::engine
