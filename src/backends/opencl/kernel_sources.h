// The kernels' OpenCL C source, embedded at build time from kernels/*.cl (CMakeLists.txt
// generates the definition).
#pragma once

#include <string>

namespace geniex::backends::opencl {

/// All kernel files concatenated in build order (common.cl first).
std::string kernel_source();

}  // namespace geniex::backends::opencl
