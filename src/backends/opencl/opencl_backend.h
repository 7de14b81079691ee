// The OpenCL GPU backend: runs whole graphs on an OpenCL 1.2+ device (aimed at Adreno; tested on
// PoCL and meant to run on any conformant driver without vendor extensions). The ICD loader is
// loaded at run time, so creating the backend where OpenCL is absent is a kNotFound Status.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "core/status.h"
#include "graph/op.h"

namespace geniex::backends {

/// How make_opencl_backend picks and configures its device.
struct OpenclBackendOptions {
  /// Case-insensitive substring of "<platform name> <device name>"; empty: the first GPU, or
  /// when there is none the first device of any type.
  std::string device_filter;
  /// Where compiled program binaries are kept; empty: $XDG_CACHE_HOME/geniex/opencl (or
  /// ~/.cache/geniex/opencl); "none": no disk cache.
  std::string program_cache_dir;
  /// Device bytes this backend may allocate (weights, activations, KV copies); 0: the device's
  /// global memory. Going past it is kResourceExhausted.
  uint64_t memory_limit_bytes = 0;
  /// Ops answered kUnsupported ("disabled by options"), e.g. to test the scheduler's fallback.
  std::set<graph::OpKind> disabled_ops;
  /// The ICD loader to dlopen; empty: "libOpenCL.so.1", then "libOpenCL.so".
  std::string loader_path;
  /// Time every kernel with profiling events (OpenclStats::device_ms).
  bool profiling = true;
  /// Use double (cl_khr_fp64, where the device has it) in norms, activations, softmax and RoPE
  /// to match the reference's rounding; false: f32 only, as on devices without fp64 (tests).
  bool use_fp64 = true;
};

/// Counters of one OpenCL backend instance (cumulative unless named last_*).
struct OpenclStats {
  uint64_t runs = 0;              ///< completed run() calls
  uint64_t kernels = 0;           ///< kernels enqueued
  uint64_t bytes_uploaded = 0;    ///< host -> device, weights included
  uint64_t bytes_downloaded = 0;  ///< device -> host (outputs, KV rows written back)
  uint64_t weight_uploads = 0;    ///< weight tensors uploaded (once each while cached)
  uint64_t weight_bytes_uploaded = 0;
  uint64_t last_bytes_uploaded = 0;    ///< by the last run
  uint64_t last_bytes_downloaded = 0;  ///< by the last run
  double last_device_ms = 0.0;         ///< kernel time of the last run (profiling events)
  double device_ms = 0.0;              ///< kernel time of all runs
  uint64_t device_bytes_in_use = 0;    ///< bytes of live device buffers
  bool program_from_cache = false;     ///< the kernels were loaded from a cached binary
  bool program_cache_written = false;  ///< this instance stored a binary in the cache
};

/// One OpenCL device as `geniex` lists it.
struct OpenclDeviceInfo {
  std::string platform;
  std::string name;
  std::string vendor;
  std::string driver_version;
  uint64_t global_mem_bytes = 0;
  bool is_gpu = false;
  bool fp16 = false;  ///< cl_khr_fp16 is available
};

/// Creates the backend on the device chosen by `options`. No loader, no platform or no matching
/// device is kNotFound with the reason; a kernel build failure is kInternal with the build log.
Result<std::unique_ptr<Backend>> make_opencl_backend(const OpenclBackendOptions& options = {});

/// Every OpenCL device on every platform of the loader `loader_path` (empty: the default).
Result<std::vector<OpenclDeviceInfo>> list_opencl_devices(const std::string& loader_path = {});

/// The device of `backend` when it is an OpenCL backend, else nullopt.
std::optional<OpenclDeviceInfo> opencl_device(const Backend& backend);

/// The counters of `backend` when it is an OpenCL backend, else nullopt.
std::optional<OpenclStats> opencl_stats(const Backend& backend);

}  // namespace geniex::backends
