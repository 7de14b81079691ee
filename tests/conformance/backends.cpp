// The conformance suite's backends. CPU: one entry per ISA level of this build's family; each
// case makes its backends with CpuBackendOptions::isa at the entry's level (the kernels' cap is
// process-wide, so it is set again by every case), and levels this CPU lacks are skipped.
#include "conformance/backends.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/isa.h"
#include "backends/npu/npu_backend.h"
#ifdef GENIEX_CONFORMANCE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#ifdef GENIEX_CONFORMANCE_QNN
#include "backends/npu/qnn/qnn_test_env.h"
#endif

namespace geniex::conformance {
namespace {

using Instances = std::vector<std::unique_ptr<backends::Backend>>;

BackendEntry cpu_entry(cpu::Isa isa) {
  BackendEntry e;
  e.name = "cpu_" + std::string(cpu::isa_name(isa));
  e.family = "cpu";
  e.not_here = [isa]() -> std::string {
    if (!cpu::isa_available(isa)) {
      return std::string(cpu::isa_name(isa)) + " is not available on this CPU";
    }
    return {};
  };
  e.make = [isa]() -> Result<Instances> {
    Instances out;
    for (int threads : {1, 3}) {
      backends::CpuBackendOptions o;
      o.n_threads = threads;
      o.isa = isa;
      GENIEX_ASSIGN_OR_RETURN(auto b, backends::make_cpu_backend(o));
      out.push_back(std::move(b));
    }
    if (cpu::detect_isa() != isa) {
      return internal_error("the kernels run at " + std::string(cpu::isa_name(cpu::detect_isa())) +
                            ", not " + std::string(cpu::isa_name(isa)));
    }
    return out;
  };
  return e;
}

std::vector<BackendEntry> make_entries() {
  std::vector<BackendEntry> out;
#if defined(__x86_64__) || defined(_M_X64)
  for (auto isa : {cpu::Isa::kScalar, cpu::Isa::kSse4, cpu::Isa::kAvx2, cpu::Isa::kAvx512,
                   cpu::Isa::kAvx512Vnni}) {
    out.push_back(cpu_entry(isa));
  }
#elif defined(__aarch64__)
  for (auto isa :
       {cpu::Isa::kScalar, cpu::Isa::kNeon, cpu::Isa::kNeonDotprod, cpu::Isa::kNeonI8mm}) {
    out.push_back(cpu_entry(isa));
  }
#else
  out.push_back(cpu_entry(cpu::Isa::kScalar));
#endif
#ifdef GENIEX_CONFORMANCE_OPENCL
  {
    BackendEntry e;
    e.name = "opencl";
    e.family = "opencl";
    e.not_here = [] { return std::string(); };
    e.make = []() -> Result<Instances> {
      backends::OpenclBackendOptions o;
      // Kept across test processes (ctest runs each case alone): only the first compiles.
      o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
      GENIEX_ASSIGN_OR_RETURN(auto b, backends::make_opencl_backend(o));
      Instances v;
      v.push_back(std::move(b));
      return v;
    };
    out.push_back(std::move(e));
  }
#endif
  {
    BackendEntry e;
    e.name = "npu_ref";
    e.family = "npu_ref";
    e.target.static_tokens = {1, 128};
    e.not_here = [] { return std::string(); };
    e.make = []() -> Result<Instances> {
      backends::NpuOptions o;
      o.max_cached_graphs = 16;
      GENIEX_ASSIGN_OR_RETURN(
          auto b, backends::make_npu_backend(std::filesystem::path(GENIEX_NPU_REF_PLUGIN), o));
      Instances v;
      v.push_back(std::move(b));
      return v;
    };
    out.push_back(std::move(e));
  }
#ifdef GENIEX_CONFORMANCE_QNN
  {
    // Qualcomm's HTP (emulated on x86-64) through the QNN plugin: skipped only where the runtime
    // is absent and scripts/setup.sh did not install it.
    BackendEntry e;
    e.name = "npu_qnn";
    e.family = "npu_qnn";
    e.target.static_tokens = {1, 128};
    e.not_here = [] { return npu_qnn::testing::qnn_test_env().skip_reason(); };
    e.make = []() -> Result<Instances> {
      backends::NpuOptions o;
      o.max_cached_graphs = 16;
      auto b = backends::make_npu_backend(std::filesystem::path(GENIEX_NPU_QNN_PLUGIN), o);
      if (!b.ok()) {
        return Status(b.status().code(), b.status().message() + " [" +
                                             npu_qnn::testing::qnn_test_env().context() + "]");
      }
      Instances v;
      v.push_back(std::move(*b));
      return v;
    };
    out.push_back(std::move(e));
  }
#endif
  return out;
}

}  // namespace

const std::vector<BackendEntry>& all_backends() {
  static const std::vector<BackendEntry> entries = make_entries();
  return entries;
}

}  // namespace geniex::conformance
