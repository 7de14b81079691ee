// `geniex imatrix`: the importance matrix llama-imatrix computes — for every matrix
// multiplication with a layer weight ("blk.*"), the per-column sum of squared input activations
// over the calibration tokens, and the number of tokens — written in llama.cpp's imatrix GGUF
// format (`<weight>.in_sum2` [ne0, 1] and `<weight>.counts` [1, 1] F32, imatrix.datasets /
// chunk_count / chunk_size) so llama-quantize --imatrix and geniex quantize --imatrix read it.
//
// The activations come from the model's forward graph run by the scalar reference interpreter
// (src/graph/run_reference) in F32, one chunk of n_ctx tokens at a time from an empty context,
// as llama-imatrix evaluates its chunks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace geniex::quantize {

/// The range of the activations multiplied with one weight, over every token and column: what
/// the NPU path needs to pick static int8/int16 activation scales.
struct ActivationRange {
  float min = 0.0f;
  float max = 0.0f;
  double sum_sq = 0.0;  ///< sum of x^2 over all values
  uint64_t n = 0;       ///< values seen
  /// Every value while there are at most kRangeSample, then a uniform sample of that many
  /// (reservoir sampling with a fixed seed: the same text gives the same file).
  std::vector<float> sample;
};
inline constexpr size_t kRangeSample = size_t{1} << 20;

/// The nearest-rank percentile `p` (0..100) of the sample, of |x| when `absolute`.
float range_percentile(const ActivationRange& r, double p, bool absolute);

struct ImatrixStats {
  std::map<std::string, std::vector<double>> sums;  ///< weight name -> per-column sum of x^2
  std::map<std::string, int64_t> counts;            ///< weight name -> tokens seen
  std::map<std::string, ActivationRange> ranges;    ///< with ImatrixOptions::ranges
  int32_t chunk_size = 0;
  int32_t chunks = 0;
};

struct ImatrixOptions {
  int32_t n_ctx = 512;
  int32_t n_chunks = -1;  ///< < 0: every whole chunk of the text
  bool add_bos = false;   ///< the first token of every chunk becomes `bos`
  int32_t bos = 0;
  bool ranges = false;  ///< also record ActivationRange per weight
  std::function<void(int32_t chunk, int32_t n_chunks)> on_chunk;
};

/// Runs `tokens` through `model` chunk by chunk and accumulates the statistics. The text must
/// hold at least two chunks (llama-imatrix's rule).
Result<ImatrixStats> collect_imatrix(const gguf::GgufFile& model, std::span<const int32_t> tokens,
                                     const ImatrixOptions& opts);

/// Writes `stats` as llama.cpp's imatrix GGUF (atomically); `dataset` is recorded as the text.
Status write_imatrix(const std::string& path, const ImatrixStats& stats,
                     const std::string& dataset);

}  // namespace geniex::quantize
