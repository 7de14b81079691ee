// Host-side work of the QNN HTP plugin around one graphExecute: what the HTP graph cannot do
// with static shapes and fp16 compute, done on the host from the execute buffers. Before
// execute: RoPE cos / sin tables from the positions, attention's additive mask and "any key
// visible" factors from q_pos / k_pos / q_seg, the cached K / V rows of a key list gathered from
// a state (F32 or F16) with the rows this step writes zeroed and a one-hot selector that puts
// the step's new rows in their list entries. After execute: CacheWrite's scatter of the new rows
// into the state (rounded to its type). Pure functions over spans: no QNN here.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "geniex/npu_plugin.h"

namespace geniex::npu_qnn {

/// The execute buffers by tensor id, with checked typed views.
class Buffers {
 public:
  Buffers(const geniex_npu_buffer* buffers, uint32_t n);
  /// The buffer of `id`: kInvalidArgument naming `what` when absent or NULL.
  [[nodiscard]] Result<const geniex_npu_buffer*> get(uint32_t id, const std::string& what) const;
  /// `n` I32 values of input `id` (exact size).
  [[nodiscard]] Result<std::span<const int32_t>> ints(uint32_t id, int64_t n,
                                                      const std::string& what) const;
  /// A state of at least `bytes` bytes.
  [[nodiscard]] Result<uint8_t*> state(uint32_t id, uint64_t bytes, const std::string& what) const;

 private:
  std::map<uint32_t, const geniex_npu_buffer*> by_id_;
};

/// RoPE of x [d, H, T] (GenieX), as y = x * cos + rot(x) * sin with rot a fixed permutation of a
/// head's elements; the tables are [T, d] (the same for every head).
struct RopeTables {
  int64_t d = 0, n_dims = 0, tokens = 0;
  bool neox = false;
  float base = 10000.0f, freq_scale = 1.0f;
  std::vector<float> freq_factors;  ///< empty, or n_dims / 2 divisors of theta
};
/// The permutation rot: element i of rot(x) is x[perm[i]] (pairs swapped; dims >= n_dims kept).
std::vector<int32_t> rope_permutation(const RopeTables& r);
/// cos [T, d] and signed sin [T, d] for positions `pos` (theta computed in double as the
/// reference does; dims >= n_dims: cos 1, sin 0).
void fill_rope_tables(const RopeTables& r, std::span<const int32_t> pos, float* cos, float* sin);

/// The visibility rules of one Attention op (graph/README.md), evaluated on the host.
struct AttentionMask {
  int64_t tq = 0, tk = 0;
  bool causal = true;
  int32_t window = 0;
};
/// mask [tq, tk]: 0 where key j is visible to query i, else `kMasked`; any [tq]: 1 if query i
/// sees a key, else 0; seen [tk]: 1 if some query sees key j. `q_seg` may be empty.
/// kOutOfRange for a segment outside [0, tk].
inline constexpr float kMasked = -30000.0f;  // exp() of it is 0 in fp16, and it cannot overflow
Status fill_attention_mask(const AttentionMask& m, std::span<const int32_t> q_pos,
                           std::span<const int32_t> k_pos, std::span<const int32_t> q_seg,
                           float* mask, float* any, std::vector<uint8_t>& seen);

/// Where a key list's rows come from: rows k_rows[j] (or j) of a state [row_elems, S] of F32 /
/// F16, and which of them the step's CacheWrite writes (token t to row slots[t], the last token
/// wins).
struct KeyGather {
  int64_t tk = 0, rows = 0, row_elems = 0;
  GgmlType type = GgmlType::kF32;
  int64_t tokens = 0;  ///< the step's new rows (0: no CacheWrite)
};
/// old [tk, row_elems]: the state's row for entry j, or zeros where no query sees it or the step
/// rewrites it; sel [tk, tokens] (when tokens > 0): 1 at (j, t) where entry j's row is written by
/// token t. kOutOfRange for a k_rows / slots entry outside [0, rows).
Status gather_keys(const KeyGather& g, const uint8_t* state, std::span<const int32_t> k_rows,
                   std::span<const int32_t> slots, const std::vector<uint8_t>& seen, float* old,
                   float* sel);

/// CacheWrite: row t of src [tokens, row_elems] into row slots[t] of the state, rounded to its
/// type (F16: round to nearest even). Every slot is checked first (kOutOfRange).
Status scatter_rows(const KeyGather& g, std::span<const int32_t> slots, const float* src,
                    uint8_t* state);

}  // namespace geniex::npu_qnn
