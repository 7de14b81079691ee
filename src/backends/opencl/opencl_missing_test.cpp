// Runs in every CI stage (also where no OpenCL exists): a loader or device that cannot be found
// is a clear kNotFound, never a crash.
#include <gtest/gtest.h>

#include "backends/opencl/opencl_backend.h"

namespace geniex::backends {
namespace {

TEST(OpenclMissing, NonexistentLoaderIsNotFound) {
  OpenclBackendOptions o;
  o.loader_path = "libgeniex-no-such-opencl.so.7";
  auto b = make_opencl_backend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
  EXPECT_NE(b.status().message().find("libgeniex-no-such-opencl.so.7"), std::string::npos)
      << b.status().message();
  auto devices = list_opencl_devices(o.loader_path);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kNotFound);
}

TEST(OpenclMissing, DefaultLoaderGivesABackendOrAClearError) {
  // With PoCL installed this finds a device; under qemu (no arm64 ICD) it must say why not.
  OpenclBackendOptions o;
  o.program_cache_dir = "none";
  auto b = make_opencl_backend(o);
  if (b.ok()) {
    EXPECT_EQ((*b)->kind(), DeviceKind::kGpu);
    EXPECT_EQ((*b)->name().rfind("opencl(", 0), 0u);
  } else {
    EXPECT_EQ(b.status().code(), StatusCode::kNotFound) << b.status().to_string();
    EXPECT_NE(b.status().message().find("opencl"), std::string::npos);
  }
}

}  // namespace
}  // namespace geniex::backends
