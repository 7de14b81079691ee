// The OpenCL C API loaded at run time: the ICD loader is dlopen'ed (no link-time dependency on
// libOpenCL, so the binary runs where no OpenCL is installed) and the entry points this backend
// uses are resolved into a function table. RAII owners for the cl objects live here too.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <memory>
#include <string>
#include <type_traits>

#include "core/status.h"

namespace geniex::backends::opencl {

/// Entry points of the OpenCL 1.2 C API, resolved from the loader with dlsym.
struct ClApi {
#define GENIEX_CL_FN(name) decltype(&::name) name = nullptr;
// clang-format off
#define GENIEX_CL_FUNCTIONS(X) \
  X(clGetPlatformIDs) \
  X(clGetPlatformInfo) \
  X(clGetDeviceIDs) \
  X(clGetDeviceInfo) \
  X(clCreateContext) \
  X(clReleaseContext) \
  X(clCreateCommandQueue) \
  X(clReleaseCommandQueue) \
  X(clCreateBuffer) \
  X(clReleaseMemObject) \
  X(clCreateProgramWithSource) \
  X(clCreateProgramWithBinary) \
  X(clBuildProgram) \
  X(clGetProgramBuildInfo) \
  X(clGetProgramInfo) \
  X(clReleaseProgram) \
  X(clCreateKernel) \
  X(clReleaseKernel) \
  X(clSetKernelArg) \
  X(clEnqueueNDRangeKernel) \
  X(clEnqueueWriteBuffer) \
  X(clEnqueueReadBuffer) \
  X(clFinish) \
  X(clGetEventProfilingInfo) \
  X(clReleaseEvent) \
  X(clGetKernelWorkGroupInfo)
  // clang-format on
  GENIEX_CL_FUNCTIONS(GENIEX_CL_FN)
#undef GENIEX_CL_FN
  std::string library;  ///< the file name that was loaded
};

/// Loads the ICD loader `path` (empty: "libOpenCL.so.1", then "libOpenCL.so") once per process
/// and returns its function table. A missing library or entry point is kNotFound. The library
/// is never unloaded: ICD loaders and vendor drivers are not written to be dlclose'd.
Result<const ClApi*> load_cl_api(const std::string& path);

/// "CL_INVALID_VALUE"-style name of an OpenCL error code.
std::string cl_error_name(cl_int err);

/// A Status for a failed call: kResourceExhausted for out-of-memory codes, else kInternal.
Status cl_status(cl_int err, const std::string& what);

/// Deleter of a cl object type, calling its release function through the table.
template <typename Handle>
struct ClRelease {
  const ClApi* api = nullptr;
  void operator()(Handle h) const {
    if (h == nullptr || api == nullptr) return;
    if constexpr (std::is_same_v<Handle, cl_mem>) {
      api->clReleaseMemObject(h);
    } else if constexpr (std::is_same_v<Handle, cl_kernel>) {
      api->clReleaseKernel(h);
    } else if constexpr (std::is_same_v<Handle, cl_program>) {
      api->clReleaseProgram(h);
    } else if constexpr (std::is_same_v<Handle, cl_command_queue>) {
      api->clReleaseCommandQueue(h);
    } else if constexpr (std::is_same_v<Handle, cl_context>) {
      api->clReleaseContext(h);
    } else if constexpr (std::is_same_v<Handle, cl_event>) {
      api->clReleaseEvent(h);
    }
  }
};

/// Owner of one cl object (cl_mem, cl_kernel, ...).
template <typename Handle>
using ClPtr = std::unique_ptr<std::remove_pointer_t<Handle>, ClRelease<Handle>>;

/// Wraps `h` (may be null) for release through `api`.
template <typename Handle>
ClPtr<Handle> cl_own(const ClApi* api, Handle h) {
  return ClPtr<Handle>(h, ClRelease<Handle>{api});
}

}  // namespace geniex::backends::opencl
