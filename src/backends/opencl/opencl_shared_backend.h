// The OpenCL backend the backend-specific tests share (its kernels build once per process and its
// program cache folder is kept across processes); graphs come from tests/conformance's Problem.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "backends/opencl/opencl_backend.h"
#include "conformance/compare.h"
#include "conformance/problem.h"

namespace geniex::backends::opencl_test {

using namespace conformance;  // NOLINT(build/namespaces): Problem, nmse, compare_with_reference

/// A fresh, empty program-cache folder under the test temp dir.
inline std::string fresh_cache_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "geniex_opencl_" + name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return dir;
}

/// The shared backend (created on first use; no device fails the test).
inline Backend& shared_backend() {
  static std::unique_ptr<Backend> b = [] {
    OpenclBackendOptions o;
    o.program_cache_dir = ::testing::TempDir() + "geniex_opencl_shared";
    auto r = make_opencl_backend(o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  if (!b) throw std::runtime_error("no OpenCL backend");
  return *b;
}

/// compare_with_reference on the shared backend (or `backend`).
inline double compare(Problem& c, NodeId out, const std::string& what,
                      Backend& backend = shared_backend()) {
  return compare_with_reference(c, out, what, backend);
}

}  // namespace geniex::backends::opencl_test
