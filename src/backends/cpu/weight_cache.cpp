#include "backends/cpu/weight_cache.h"

#include "backends/cpu/kernels/repack.h"
#include "quant/quant.h"

namespace geniex::backends::cpu {
namespace {

size_t sz(int64_t v) { return static_cast<size_t>(v); }

bool same_shape(const PackedMatrix* pm, GgmlType type, int64_t k, int64_t n) {
  return pm != nullptr && pm->type == type && pm->k == k && pm->n == n;
}

}  // namespace

WeightCache::MatmulWeight WeightCache::prepare_matmul(ThreadPool& pool, GgmlType type,
                                                      std::span<const uint8_t> w, int64_t k,
                                                      int64_t n) {
  if (repack_enabled(type, repack_) && ::geniex::cpu::can_repack(type)) {
    auto [it, fresh] = packed_.try_emplace(w.data());
    if (fresh || (it->second != nullptr && !same_shape(it->second.get(), type, k, n))) {
      // A weight re-bound with another shape (never in a model) leaves its old copy unused in
      // the arena.
      it->second = pack_matrix(pool, type, w, k, n, huge_pages_, &arena_);
    }
    if (it->second != nullptr) return {it->second.get(), nullptr};
  }
  auto it = copied_.find(w.data());
  if (it == copied_.end()) {
    const uint8_t* copy = huge_pages_ ? copy_to_huge_pages(pool, w, arena_) : nullptr;
    it = copied_.emplace(w.data(), Copy{copy, w.size()}).first;
  }
  const bool copy = it->second.data != nullptr && it->second.size == w.size();
  return {nullptr, copy ? it->second.data : w.data()};
}

WeightCache::MatmulWeight WeightCache::find_table(GgmlType type, std::span<const uint8_t> w,
                                                  int64_t k, int64_t n) const {
  MatmulWeight t{nullptr, w.data()};
  if (const auto it = packed_.find(w.data());
      it != packed_.end() && same_shape(it->second.get(), type, k, n)) {
    t.packed = it->second.get();
  }
  // `bytes` also serves a packed table whose type has no unpacking (embedding_packed).
  if (const auto it = copied_.find(w.data());
      it != copied_.end() && it->second.data != nullptr && it->second.size == w.size()) {
    t.bytes = it->second.data;
  }
  return t;
}

Result<const float*> WeightCache::dequantized(GgmlType type, std::span<const uint8_t> w,
                                              int64_t row_elems, int64_t rows) {
  const auto row = ggml_row_bytes(type, static_cast<uint64_t>(row_elems));
  if (!row) return invalid_argument("row is not whole blocks");
  F32Copy& c = dequantized_[w.data()];
  if (c.type != type || c.values.size() != sz(row_elems * rows)) {
    c.values.resize(sz(row_elems * rows));
    for (int64_t r = 0; r < rows; ++r) {
      Status s = quant::dequantize_row(
          type, w.subspan(sz(r) * *row, *row),
          std::span<float>(c.values).subspan(sz(r * row_elems), sz(row_elems)));
      if (!s.ok()) {
        c.values.clear();  // not a copy: made again (and failing again) at the next call
        return s;
      }
    }
    c.type = type;
  }
  return c.values.data();
}

}  // namespace geniex::backends::cpu
