// Builds the backend's OpenCL program, through an on-disk cache of driver binaries keyed by the
// source, device, driver version and build options (CL_PROGRAM_BINARIES, written atomically).
#pragma once

#include <string>

#include "backends/opencl/cl_api.h"
#include "core/status.h"

namespace geniex::backends::opencl {

/// What build_program did.
struct ProgramBuild {
  ClPtr<cl_program> program;
  bool from_cache = false;     ///< loaded from a cached binary
  bool cache_written = false;  ///< a binary was stored after a source build
};

/// Where the cache lives for the option value `dir` ("" -> $XDG_CACHE_HOME/geniex/opencl or
/// ~/.cache/geniex/opencl; "none" -> "", no cache).
std::string resolve_cache_dir(const std::string& dir);

/// Builds `source` with `options` for `device`, loading / storing the binary in `cache_dir` (""
/// disables the cache). A cached file that is corrupt or rejected by the driver is ignored and
/// replaced; a cache directory that cannot be written only loses the cache. A compile error is
/// kInternal with the build log.
Result<ProgramBuild> build_program(const ClApi& api, cl_context ctx, cl_device_id device,
                                   const std::string& source, const std::string& options,
                                   const std::string& device_key, const std::string& cache_dir);

}  // namespace geniex::backends::opencl
