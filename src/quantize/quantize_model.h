// `geniex quantize`: a GGUF model to another file type, the way llama-quantize does it — the
// same per-tensor types, metadata, tensor order, alignment and (without an importance matrix,
// and with one for the weighted types) the same bytes. Streaming: tensors are read one at a time
// from the mapped input and written to a temporary file beside OUT that is renamed at the end,
// so OUT is either complete or absent; rows are quantized in parallel on a thread pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/status.h"
#include "quantize/file_type.h"
#include "quantize/tensor_policy.h"

namespace geniex::quantize {

struct QuantizeOptions {
  FileTypeInfo file_type;
  PolicyOptions policy;      ///< has_imatrix is set from imatrix_path
  std::string imatrix_path;  ///< empty: no importance matrix
  int threads = 0;           ///< <= 0: the CPUs this process may use
  /// Called before each tensor: index (0-based), count, name, source and target type.
  std::function<void(size_t, size_t, const std::string&, GgmlType, GgmlType)> on_tensor;
  /// Set (e.g. by a signal handler) to stop between slabs: an error, the temp file removed.
  const std::atomic<bool>* cancel = nullptr;
};

struct QuantizeReport {
  size_t n_tensors = 0;
  size_t n_quantized = 0;   ///< tensors whose type changed
  size_t n_fallback = 0;    ///< tensors whose row length forced another type
  uint64_t n_elements = 0;  ///< parameters
  uint64_t size_in = 0;     ///< tensor bytes before
  uint64_t size_out = 0;    ///< tensor bytes after
  uint64_t file_bytes = 0;
  size_t imatrix_entries = 0;
  int threads = 1;
};

/// Quantizes `in_path` into `out_path`. Errors (unknown architecture metadata, a source tensor
/// that is already quantized, a type a tensor cannot take, an importance matrix that does not fit
/// the model, I/O) leave no output file behind.
Result<QuantizeReport> quantize_model(const std::string& in_path, const std::string& out_path,
                                      const QuantizeOptions& opts);

}  // namespace geniex::quantize
