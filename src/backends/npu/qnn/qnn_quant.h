// The quantized HTP path of the QNN plugin (config precision=w8a16 | w8): the numbers only, no
// QNN calls. Per-channel int8 weights from our f32 weights (symmetric, absmax / 127, round to
// nearest even), 16-bit activation encodings from a range, and the activation-ranges file
// `geniex imatrix --activation-ranges` writes (docs/cli.md, "Activation ranges").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/npu/qnn/qnn_api.h"
#include "core/status.h"

namespace geniex::npu_qnn {

/// How the plugin computes (config precision=...).
enum class Precision : uint8_t {
  kFp16,   ///< fp16 activations, weights dequantized to fp16 (the default)
  kW8A16,  ///< int8 per-channel weights, 16-bit activations at every FullyConnected
  kW8,     ///< int8 per-channel weights, fp16 activations (weight-only)
  kW4A16,  ///< int4 per-channel weights, 16-bit activations at every FullyConnected
};
const char* precision_name(Precision p);

/// A closed interval of activation values.
struct Range {
  float min = 0.0f;
  float max = 0.0f;
  /// The 99.9th percentile of |value| (0: unknown): how much of the range the bulk of the values
  /// use (qnn_calibrate.h's outlier rule).
  float typical = 0.0f;
};

/// The activation-ranges file: for each weight, the range of its matrix product's input, and the
/// input width (values / tokens) that ties the file to a model's shapes.
struct ActivationRanges {
  std::string path;
  std::string model;  ///< as the file records it (for messages)
  struct Entry {
    Range range;
    int64_t columns = 0;  ///< values per token: the matrix product's K
  };
  std::map<std::string, Entry> tensors;
  uint64_t hash = 0;  ///< of the file's bytes (part of every quantized graph's cache key)
};

/// Reads and checks `path`. A missing file, bad JSON, another format or version, or an entry
/// without finite min <= max is kInvalidArgument naming the file and what is wrong.
Result<std::shared_ptr<const ActivationRanges>> load_activation_ranges(const std::string& path);

/// Symmetric per-channel int8 of a row-major [n, k] f32 matrix: scale_c = absmax_c / qmax (1
/// where a row is all zero), q = round-to-nearest-even(w / scale_c) clamped to [-qmax, qmax]
/// (qmax 127; 7 for int4 values).
struct WeightQ8 {
  std::vector<int8_t> q;             ///< [n, k]
  std::vector<api::ScaleOffset> so;  ///< n entries, offset 0
  std::vector<float> scales;         ///< the scales alone (the bit-width encoding's array)
};
WeightQ8 quantize_per_channel(const float* w, uint32_t n, uint32_t k, int qmax = 127);

/// The UFIXED_POINT_16 encoding of `r` widened to hold 0 (so zero is exact) and at least 1e-6
/// wide: scale = (max - min) / 65535, offset = round(min / scale) (<= 0).
api::ScaleOffset u16_encoding(Range r);

/// `r` widened by `margin` of its width on each side (calibrated ranges: values beyond the
/// first inputs' extremes saturate less).
Range widened(Range r, float margin);

}  // namespace geniex::npu_qnn
