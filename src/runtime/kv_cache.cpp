#include "runtime/kv_cache.h"

#include <new>
#include <string>

namespace geniex::runtime {

Result<KvCache> KvCache::create(const KvCacheSpec& spec) {
  if (spec.n_ctx < 1) return invalid_argument("kv cache: n_ctx must be >= 1");
  if (spec.type != GgmlType::kF16 && spec.type != GgmlType::kF32) {
    return unimplemented("kv cache: type " + std::string(ggml_type_name(spec.type)) +
                         " (F16 and F32 are supported)");
  }
  if (spec.k_row_elems.size() != spec.v_row_elems.size() || spec.k_row_elems.empty()) {
    return invalid_argument("kv cache: need the same number (>= 1) of K and V layers");
  }
  KvCache c(spec);
  c.elem_size_ = spec.type == GgmlType::kF16 ? 2 : 4;
  for (size_t il = 0; il < spec.k_row_elems.size(); ++il) {
    const auto n_k =
        static_cast<size_t>(spec.k_row_elems[il]) * c.elem_size_ * static_cast<size_t>(spec.n_ctx);
    const auto n_v =
        static_cast<size_t>(spec.v_row_elems[il]) * c.elem_size_ * static_cast<size_t>(spec.n_ctx);
    // Uninitialized on purpose: pages are only touched (made resident) as tokens are written.
    std::unique_ptr<uint8_t[]> kb(new (std::nothrow) uint8_t[n_k]);
    std::unique_ptr<uint8_t[]> vb(new (std::nothrow) uint8_t[n_v]);
    if (!kb || !vb) {
      return resource_exhausted("kv cache: cannot reserve " + std::to_string(n_k + n_v) +
                                " bytes for layer " + std::to_string(il) + " (n_ctx " +
                                std::to_string(spec.n_ctx) + "); lower the context size");
    }
    c.k_.push_back(std::move(kb));
    c.v_.push_back(std::move(vb));
  }
  return c;
}

std::span<uint8_t> KvCache::k(size_t il) {
  return {k_[il].get(), static_cast<size_t>(spec_.k_row_elems[il]) * elem_size_ *
                            static_cast<size_t>(spec_.n_ctx)};
}

std::span<uint8_t> KvCache::v(size_t il) {
  return {v_[il].get(), static_cast<size_t>(spec_.v_row_elems[il]) * elem_size_ *
                            static_cast<size_t>(spec_.n_ctx)};
}

Status KvCache::append(int32_t n) {
  if (n < 0 || static_cast<int64_t>(n_used_) + n > spec_.n_ctx) {
    return out_of_range("context is full: " + std::to_string(n_used_) + " tokens cached + " +
                        std::to_string(n) + " new > n_ctx " + std::to_string(spec_.n_ctx));
  }
  n_used_ += n;
  return {};
}

void KvCache::truncate(int32_t n) {
  if (n >= 0 && n < n_used_) n_used_ = n;
}

size_t KvCache::bytes_per_token() const {
  size_t total = 0;
  for (size_t il = 0; il < spec_.k_row_elems.size(); ++il) {
    total += static_cast<size_t>(spec_.k_row_elems[il] + spec_.v_row_elems[il]) * elem_size_;
  }
  return total;
}

size_t KvCache::reserved_bytes() const {
  return bytes_per_token() * static_cast<size_t>(spec_.n_ctx);
}

}  // namespace geniex::runtime
