// Platform / device discovery: the device list `geniex` prints and the choice of the backend's
// device from OpenclBackendOptions::device_filter.
#pragma once

#include <string>
#include <vector>

#include "backends/opencl/cl_api.h"
#include "backends/opencl/opencl_backend.h"
#include "core/status.h"

namespace geniex::backends::opencl {

/// One device with its handles.
struct DeviceEntry {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  OpenclDeviceInfo info;
};

/// Every device of every platform. No platform is kNotFound.
Result<std::vector<DeviceEntry>> enumerate_devices(const ClApi& api);

/// The device `filter` selects (see OpenclBackendOptions::device_filter); kNotFound naming the
/// devices that exist when none matches.
Result<DeviceEntry> choose_device(const ClApi& api, const std::string& filter);

}  // namespace geniex::backends::opencl
