// The activation ranges of the quantized HTP path (precision=w8a16): which ranges a graph needs,
// where each comes from, and the calibration run that finds the missing ones.
//
// Every MatMul (FullyConnected) of a w8a16 graph needs two ranges, keyed by its weight: its input
// ("<weight name>") and its output ("<weight name>#out"). The input range is the activation_ranges
// file's min / max widened by kCalibrationMargin (the file's input width must equal the weight's
// K), joined with the calibrated range where there is one (a graph with any range missing probes
// every input too); without a file entry, the calibrated range alone. The output range always
// comes from calibration. A graph with a range missing is
// compiled as the fp16 graph plus probes (copies of every FullyConnected's input and output read
// back); its first execute computes the outputs in fp16, takes each probe's min / max, widens it
// by kCalibrationMargin of its width on each side, keeps it on the device (named weights: later
// graphs of the device reuse it, unioned with their own), and replaces the graph with the
// quantized one. Unnamed weights ("#<tensor id>" keys) are calibrated per graph only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backends/npu/qnn/qnn_builder.h"

namespace geniex::npu_qnn {

/// Calibrated ranges are widened by this fraction of their width on each side.
inline constexpr float kCalibrationMargin = 0.25f;

/// A FullyConnected whose input or output range reaches past this many times the 99.9th
/// percentile of its magnitudes (the file's `abs_p99.9`, or the calibration's) keeps fp16
/// activations (as precision=w8) in a w8a16 / w4a16 graph: its bulk would get fewer than
/// 65536 / (2 * 32) = 1024 of the 16-bit steps, fp16's relative precision.
inline constexpr float kOutlierSpread = 32.0f;

/// The range key of a FullyConnected's input (or output) with weight `w`.
std::string range_key(const geniex_npu_tensor& w, bool output);

/// The plan of `desc` on `dev` (config precision, ranges known from the file, the device's
/// calibrations and `local`). kInvalidArgument when the file's entry for a weight has another
/// input width (a file for another model).
Result<QuantPlan> make_plan(const Device& dev, const geniex_npu_graph& desc,
                            const std::map<std::string, Range>& local);

/// A deep copy of `desc` and its weights.
std::unique_ptr<GraphCopy> copy_graph(const geniex_npu_graph& desc);

/// After the first execute of a probe graph: learn the ranges, compile the quantized graph and
/// put it in `c`'s place.
Status finish_calibration(Device& dev, Compiled& c);

}  // namespace geniex::npu_qnn
