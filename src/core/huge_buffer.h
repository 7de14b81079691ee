// Anonymous memory for large arrays that are streamed end to end (weights read by every decode
// step), on transparent huge pages where the kernel grants them. RAII.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace geniex {

/// Whether this kernel hands out transparent huge pages on request: its mode
/// (/sys/kernel/mm/transparent_hugepage/enabled) is "always" or "madvise". Read once. Where it is
/// "never" or absent (many Android kernels), copying data onto "huge" pages gains nothing.
bool huge_pages_available();

/// A zero-filled read-write anonymous mapping, unmapped on destruction. Buffers of at least
/// kHugePage bytes start at a kHugePage boundary and are advised MADV_HUGEPAGE (unless allocate()
/// is told not to: CpuTuning::huge_pages, A/B runs): one TLB entry then covers 2 MiB instead of 4
/// KiB, and a linear read crosses a page boundary, where the hardware prefetchers stop and restart,
/// 512 times less often. The advice is a request: a kernel without transparent huge pages, or
/// without free 2 MiB frames, gives 4 KiB pages and the same contents. Movable, not copyable.
class HugeBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  /// `bytes` > 0; `huge_pages` false: plain pages, never advised. resource_exhausted when the
  /// address space cannot hold it.
  static Result<HugeBuffer> allocate(size_t bytes, bool huge_pages = true);

  HugeBuffer() = default;
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  ~HugeBuffer();

  [[nodiscard]] uint8_t* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  /// True when MADV_HUGEPAGE was accepted for the buffer (not a promise of huge pages).
  [[nodiscard]] bool advised() const { return advised_; }

 private:
  void reset();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;    ///< bytes asked for
  size_t mapped_ = 0;  ///< bytes mapped at data_ (size_ rounded up to whole pages)
  bool advised_ = false;
};

}  // namespace geniex
