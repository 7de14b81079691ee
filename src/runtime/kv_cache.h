// KvCache: the per-layer K and V storage of one sequence (the simple, contiguous cache: slot i
// holds position i). Memory is reserved for the whole context up front but only touched as
// tokens arrive, so resident memory grows with use. The paged, shared cache replaces it later
// behind the same slot/position interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace geniex::runtime {

struct KvCacheSpec {
  int32_t n_ctx = 0;                 ///< slots (tokens) per sequence
  GgmlType type = GgmlType::kF16;    ///< F16 or F32
  std::vector<int64_t> k_row_elems;  ///< per layer: head_dim_k * n_kv_head
  std::vector<int64_t> v_row_elems;  ///< per layer: head_dim_v * n_kv_head
};

class KvCache {
 public:
  /// kInvalidArgument for a bad spec, kResourceExhausted when the memory cannot be reserved.
  static Result<KvCache> create(const KvCacheSpec& spec);

  /// Slots in use: positions [0, n_used()).
  [[nodiscard]] int32_t n_used() const { return n_used_; }
  [[nodiscard]] int32_t capacity() const { return spec_.n_ctx; }
  [[nodiscard]] GgmlType type() const { return spec_.type; }
  [[nodiscard]] size_t n_layers() const { return spec_.k_row_elems.size(); }

  /// Raw bytes of layer il's K / V cache (capacity rows).
  std::span<uint8_t> k(size_t il);
  std::span<uint8_t> v(size_t il);

  /// Claims the next `n` slots (positions n_used()..n_used()+n-1); kOutOfRange when the
  /// context would overflow (nothing changes then).
  Status append(int32_t n);
  /// Keeps only the first `n` positions (n <= n_used()).
  void truncate(int32_t n);

  /// Bytes reserved for all layers (capacity), and bytes of one token across all layers.
  [[nodiscard]] size_t reserved_bytes() const;
  [[nodiscard]] size_t bytes_per_token() const;

 private:
  explicit KvCache(KvCacheSpec spec) : spec_(std::move(spec)) {}

  KvCacheSpec spec_;
  size_t elem_size_ = 2;
  std::vector<std::unique_ptr<uint8_t[]>> k_, v_;
  int32_t n_used_ = 0;
};

}  // namespace geniex::runtime
