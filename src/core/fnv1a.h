// FNV-1a, 64-bit: the checksum and content key of our own files and caches (KV state files,
// program and context-binary caches, image cache keys). Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>

namespace geniex {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;  // the standard offset basis

/// FNV-1a of `n` bytes, continuing from `h` (kFnv1aOffset for a fresh hash).
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnv1aOffset) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace geniex
