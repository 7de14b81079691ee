#include "backends/opencl/cl_device.h"

#include <algorithm>
#include <cctype>

namespace geniex::backends::opencl {
namespace {

std::string platform_string(const ClApi& api, cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (api.clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (api.clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(const ClApi& api, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (api.clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (api.clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

Result<std::vector<DeviceEntry>> enumerate_devices(const ClApi& api) {
  cl_uint n_platforms = 0;
  cl_int err = api.clGetPlatformIDs(0, nullptr, &n_platforms);
  if (err != CL_SUCCESS || n_platforms == 0) {
    return not_found("opencl: no OpenCL platform is installed (" + api.library + ": " +
                     cl_error_name(err) + ", " + std::to_string(n_platforms) + " platforms)");
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  err = api.clGetPlatformIDs(n_platforms, platforms.data(), nullptr);
  if (err != CL_SUCCESS) return cl_status(err, "clGetPlatformIDs");
  std::vector<DeviceEntry> out;
  for (cl_platform_id p : platforms) {
    cl_uint n_dev = 0;
    if (api.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n_dev) != CL_SUCCESS || n_dev == 0) {
      continue;
    }
    std::vector<cl_device_id> devs(n_dev);
    if (api.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n_dev, devs.data(), nullptr) != CL_SUCCESS) {
      continue;
    }
    const std::string pname = platform_string(api, p, CL_PLATFORM_NAME);
    for (cl_device_id d : devs) {
      DeviceEntry e;
      e.platform = p;
      e.device = d;
      e.info.platform = pname;
      e.info.name = device_string(api, d, CL_DEVICE_NAME);
      e.info.vendor = device_string(api, d, CL_DEVICE_VENDOR);
      e.info.driver_version = device_string(api, d, CL_DRIVER_VERSION);
      cl_ulong mem = 0;
      api.clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem), &mem, nullptr);
      e.info.global_mem_bytes = mem;
      cl_device_type type = 0;
      api.clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
      e.info.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
      e.info.fp16 =
          device_string(api, d, CL_DEVICE_EXTENSIONS).find("cl_khr_fp16") != std::string::npos;
      out.push_back(std::move(e));
    }
  }
  if (out.empty()) return not_found("opencl: no OpenCL device on any platform");
  return out;
}

Result<DeviceEntry> choose_device(const ClApi& api, const std::string& filter) {
  GENIEX_ASSIGN_OR_RETURN(auto devices, enumerate_devices(api));
  if (filter.empty()) {
    for (const auto& d : devices) {
      if (d.info.is_gpu) return d;
    }
    return devices.front();
  }
  const std::string want = lower(filter);
  std::string seen;
  for (const auto& d : devices) {
    const std::string full = d.info.platform + " " + d.info.name;
    if (lower(full).find(want) != std::string::npos) return d;
    seen += (seen.empty() ? "" : ", ") + std::string("'") + full + "'";
  }
  return not_found("opencl: no device matches the filter '" + filter + "' (devices: " + seen + ")");
}

}  // namespace geniex::backends::opencl
