// The backends the conformance suite runs, one entry each: adding a backend is one more entry in
// backends.cpp (a name, its tolerance-table family, its static token counts, a factory).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/backend.h"
#include "conformance/problems.h"

namespace geniex::conformance {

/// One backend under test.
struct BackendEntry {
  std::string name;    ///< in test names, e.g. "cpu_avx2", "opencl", "npu_ref"
  std::string family;  ///< tolerance-table family: "cpu", "opencl", "npu_ref"
  Target target;       ///< static token counts, if any
  /// Empty when the entry can run in this process, else why not (a CPU ISA level above this
  /// CPU's): the case is skipped, saying so.
  std::function<std::string()> not_here;
  /// The instances to run every problem on (e.g. the CPU with 1 and with 3 threads); an error
  /// fails the case (an OpenCL device that should be there and is not).
  std::function<Result<std::vector<std::unique_ptr<backends::Backend>>>()> make;
};

/// Every backend compiled into this test binary.
const std::vector<BackendEntry>& all_backends();

}  // namespace geniex::conformance
