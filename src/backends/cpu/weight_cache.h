// Weights in the forms the CPU kernels read, made by the backend's prepare step (never inside an
// op): matmul weights repacked into the row-interleaved layouts (op_matmul_packed.cpp), large
// unpacked matmul weights copied onto huge pages, and non-F32 weights that ops read as F32
// dequantized. Each is made once per weight and kept, by the weight's data address, for every
// later graph that binds the same bytes (prefill and decode graphs share their weights). Bound
// weights are immutable, so a copy stays valid as long as the weight is bound.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/huge_arena.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace geniex::backends::cpu {

class WeightCache {
 public:
  /// `repack`: which matmul weights get packed copies; `huge_pages`: whether the copies ask for
  /// transparent huge pages (and whether unpacked weights get a huge-page copy at all).
  explicit WeightCache(CpuRepack repack = CpuRepack::kDefault, bool huge_pages = true)
      : arena_(huge_pages), repack_(repack), huge_pages_(huge_pages) {}

  /// A matmul weight as its kernel reads it: the packed copy, or (packed null) `bytes`, its
  /// huge-page copy or the weight itself.
  struct MatmulWeight {
    const PackedMatrix* packed = nullptr;
    const uint8_t* bytes = nullptr;
  };

  /// Prepares matmul weight W (n rows of k elements of `type`): repacked where
  /// repack_enabled(type, repack) and the type and shape have a packed kernel, else copied onto
  /// huge pages where that pays (copy_to_huge_pages), else read in place. Made at the first call
  /// for W's bytes.
  MatmulWeight prepare_matmul(ThreadPool& pool, GgmlType type, std::span<const uint8_t> w,
                              int64_t k, int64_t n);

  /// An embedding table as the lookup reads it: a matmul's packed copy of the same bytes and
  /// shape (a tied LM head; its original pages were handed back), else a matmul's huge-page copy,
  /// else the table itself. Makes nothing.
  [[nodiscard]] MatmulWeight find_table(GgmlType type, std::span<const uint8_t> w, int64_t k,
                                        int64_t n) const;

  /// W (rows of `row_elems` elements of `type`, `rows` of them) dequantized to F32; made at the
  /// first call for W's bytes, type and size.
  Result<const float*> dequantized(GgmlType type, std::span<const uint8_t> w, int64_t row_elems,
                                   int64_t rows);

 private:
  struct F32Copy {
    GgmlType type = GgmlType::kF32;
    std::vector<float> values;
  };
  // Every packed matrix and huge-page copy, side by side (declared first: outlives the maps).
  // Decode reads them all every step, in about the order they were made; a HugeBuffer each put
  // those under 2 MiB (most of a small model's) on 4 KiB pages: LFM2-350M Q4_K_M decoded 10 %
  // slower at one thread.
  HugeArena arena_;
  // Null entries: the weight was looked at and has no packed layout (or huge-page copy).
  std::unordered_map<const uint8_t*, std::unique_ptr<PackedMatrix>> packed_;
  struct Copy {
    const uint8_t* data = nullptr;  ///< null: no huge-page copy (read the weight in place)
    size_t size = 0;                ///< the weight's bytes it was made from
  };
  std::unordered_map<const uint8_t*, Copy> copied_;
  std::unordered_map<const uint8_t*, F32Copy> dequantized_;
  CpuRepack repack_;
  bool huge_pages_;
};

}  // namespace geniex::backends::cpu
