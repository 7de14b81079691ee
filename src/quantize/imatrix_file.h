// Reads an importance matrix as llama.cpp writes it: the GGUF format of llama-imatrix
// (`<tensor>.in_sum2` and `<tensor>.counts` F32 tensors, imatrix.datasets / chunk_count /
// chunk_size metadata) or the legacy .dat file. Values come out as llama-quantize uses them:
// sums divided by their (per-expert) counts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace geniex::quantize {

struct Imatrix {
  /// Tensor name -> per-column importance (ne[0] values per expert, experts one after another).
  std::map<std::string, std::vector<float>> entries;
  std::vector<std::string> datasets;
  int chunk_count = 0;
  bool legacy = false;
};

/// Loads `path`; a malformed or truncated file, mismatched sums/counts, non-F32 data or
/// non-finite values are kInvalidArgument naming the file.
Result<Imatrix> load_imatrix(const std::string& path);

}  // namespace geniex::quantize
