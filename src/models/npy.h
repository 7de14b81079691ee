// A minimal NumPy .npy reader for test goldens: float32 little-endian ('<f4'), C order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace geniex::models {

/// A float32 array read from a .npy file.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;  ///< C order
};

/// Parses .npy bytes (format v1.0–3.0). Only descr '<f4' with fortran_order False is accepted;
/// anything else or a size mismatch is kInvalidArgument / kDataLoss naming the problem.
Result<NpyArray> parse_npy(std::span<const uint8_t> bytes, const std::string& name = "npy");

/// Reads and parses `path` (kIoError when it cannot be read).
Result<NpyArray> read_npy(const std::string& path);

}  // namespace geniex::models
