// The problems of the conformance suite: for a subject (an op kind's name, or a small whole
// graph such as "DecoderBlock") and an input dtype, the graphs to run on a backend and on
// graph::run_reference, at shapes the target accepts.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/problem.h"

namespace geniex::conformance {

/// Tokens of the Gemma-size prefill cases (MatMul, attention). Under an emulator (qemu in the
/// aarch64 CI stage) the double-precision reference of a 256-token prefill dominated the whole
/// run (~5 minutes); 32 tokens still take the tiled prefill kernels through several tiles.
#ifdef GENIEX_CONFORMANCE_EMULATED
inline constexpr int64_t kGemmaPrefillTokens = 32;
#else
inline constexpr int64_t kGemmaPrefillTokens = 256;
#endif

/// What the problems must respect about the backend they run on.
struct Target {
  /// Token counts a static-shape backend compiles (e.g. {1, 128}); empty: any shape.
  std::vector<int32_t> static_tokens;

  [[nodiscard]] bool is_static() const { return !static_tokens.empty(); }
  /// `dynamic` for a backend that takes any shape, else its static token counts.
  [[nodiscard]] std::vector<int64_t> tokens(std::initializer_list<int64_t> dynamic) const {
    if (!is_static()) return dynamic;
    return {static_tokens.begin(), static_tokens.end()};
  }
};

using ProblemList = std::vector<std::unique_ptr<Problem>>;

/// One (subject, dtype) the suite covers.
struct Subject {
  std::string name;  ///< graph::op_name() of an op kind, or a graph's name
  GgmlType dtype;
};

/// Every (subject, input dtype) pair: each op kind with each dtype it accepts (MatMul and
/// Embedding: every weight type with a dot product / a dequantizer), then the graphs.
std::vector<Subject> all_subjects();

/// The problems of `s` for `target` (never empty for a pair of all_subjects()).
ProblemList make_problems(const Subject& s, const Target& target);

// Per family (problems_*.cpp).
ProblemList matmul_problems(GgmlType t, const Target& target);
ProblemList embedding_problems(GgmlType t, const Target& target);
ProblemList rms_norm_problems(GgmlType t, const Target& target);
/// kLayerNorm (t: the weight / bias type; F32 also without them).
ProblemList layer_norm_problems(GgmlType t, const Target& target);
ProblemList rope_problems(const Target& target);
ProblemList unary_problems(OpKind kind, const Target& target);
ProblemList glu_problems(const Target& target);
ProblemList binary_problems(OpKind kind, GgmlType t, const Target& target);
ProblemList reshape_problems(GgmlType t, const Target& target);
ProblemList get_rows_problems(const Target& target);
ProblemList hadamard_problems(const Target& target);
/// kShortConv or kShortConvState (LFM2 conv layers).
ProblemList short_conv_problems(OpKind kind, const Target& target);
ProblemList attention_problems(GgmlType t, const Target& target);
ProblemList cache_write_problems(GgmlType t, const Target& target);
ProblemList decoder_block_problems(GgmlType cache_type, const Target& target);
ProblemList two_layers_problems(GgmlType cache_type, const Target& target);

}  // namespace geniex::conformance
