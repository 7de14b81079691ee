#include "backends/api/backend.h"

namespace geniex::backends {

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kNpu: return "npu";
  }
  return "unknown";
}

std::string_view support_name(Support s) {
  switch (s) {
    case Support::kNative: return "native";
    case Support::kEmulated: return "emulated";
    case Support::kUnsupported: return "unsupported";
  }
  return "unknown";
}

}  // namespace geniex::backends
