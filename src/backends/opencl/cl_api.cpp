#include "backends/opencl/cl_api.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <vector>

namespace geniex::backends::opencl {
namespace {

struct LoadedApi {
  ClApi api;
  Status status;
};

Result<ClApi> load_from(const std::string& file) {
  // RTLD_LOCAL: the loader's symbols must not satisfy other libraries' OpenCL references.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return not_found("opencl: cannot load the ICD loader " + file + ": " +
                     (err != nullptr ? err : "unknown error"));
  }
  ClApi api;
  api.library = file;
  std::string missing;
#define GENIEX_CL_RESOLVE(name)                                          \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  GENIEX_CL_FUNCTIONS(GENIEX_CL_RESOLVE)
#undef GENIEX_CL_RESOLVE
  if (!missing.empty()) {
    dlclose(handle);
    return not_found("opencl: " + file + " lacks " + missing);
  }
  return api;  // the handle stays open for the life of the process (see the header)
}

}  // namespace

Result<const ClApi*> load_cl_api(const std::string& path) {
  // Never destroyed: backends held in static storage (e.g. a test's kept models) are destroyed
  // after this function's statics would be, and their destructors still call through the table.
  struct Registry {
    std::mutex mu;
    std::map<std::string, std::unique_ptr<LoadedApi>> loaded;
  };
  static Registry* const reg = new Registry;  // NOLINT(cppcoreguidelines-owning-memory)
  std::lock_guard<std::mutex> lock(reg->mu);
  auto& slot = reg->loaded[path];
  if (!slot) {
    slot = std::make_unique<LoadedApi>();
    const std::vector<std::string> files =
        path.empty() ? std::vector<std::string>{"libOpenCL.so.1", "libOpenCL.so"}
                     : std::vector<std::string>{path};
    std::string errors;
    for (const auto& f : files) {
      auto api = load_from(f);
      if (api.ok()) {
        slot->api = std::move(*api);
        errors.clear();
        break;
      }
      errors += (errors.empty() ? "" : "; ") + api.status().message();
    }
    if (!errors.empty()) slot->status = not_found(errors);
  }
  if (!slot->status.ok()) return slot->status;
  return &slot->api;
}

std::string cl_error_name(cl_int err) {
  switch (err) {
#define GENIEX_CL_ERR(e) \
  case e: return #e;
    GENIEX_CL_ERR(CL_SUCCESS)
    GENIEX_CL_ERR(CL_DEVICE_NOT_FOUND)
    GENIEX_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    GENIEX_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    GENIEX_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    GENIEX_CL_ERR(CL_OUT_OF_RESOURCES)
    GENIEX_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    GENIEX_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    GENIEX_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    GENIEX_CL_ERR(CL_INVALID_VALUE)
    GENIEX_CL_ERR(CL_INVALID_DEVICE_TYPE)
    GENIEX_CL_ERR(CL_INVALID_PLATFORM)
    GENIEX_CL_ERR(CL_INVALID_DEVICE)
    GENIEX_CL_ERR(CL_INVALID_CONTEXT)
    GENIEX_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    GENIEX_CL_ERR(CL_INVALID_MEM_OBJECT)
    GENIEX_CL_ERR(CL_INVALID_BINARY)
    GENIEX_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    GENIEX_CL_ERR(CL_INVALID_PROGRAM)
    GENIEX_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    GENIEX_CL_ERR(CL_INVALID_KERNEL_NAME)
    GENIEX_CL_ERR(CL_INVALID_KERNEL)
    GENIEX_CL_ERR(CL_INVALID_ARG_INDEX)
    GENIEX_CL_ERR(CL_INVALID_ARG_VALUE)
    GENIEX_CL_ERR(CL_INVALID_ARG_SIZE)
    GENIEX_CL_ERR(CL_INVALID_KERNEL_ARGS)
    GENIEX_CL_ERR(CL_INVALID_WORK_DIMENSION)
    GENIEX_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    GENIEX_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    GENIEX_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    GENIEX_CL_ERR(CL_INVALID_EVENT)
    GENIEX_CL_ERR(CL_INVALID_OPERATION)
    GENIEX_CL_ERR(CL_INVALID_BUFFER_SIZE)
    GENIEX_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef GENIEX_CL_ERR
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "CL error " + std::to_string(err);
  }
}

Status cl_status(cl_int err, const std::string& what) {
  const std::string msg = "opencl: " + what + " failed: " + cl_error_name(err);
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY) {
    return resource_exhausted(msg);
  }
  return internal_error(msg);
}

}  // namespace geniex::backends::opencl
