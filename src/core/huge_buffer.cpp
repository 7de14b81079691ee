#include "core/huge_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace geniex {

bool huge_pages_available() {
  static const bool available = [] {
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) return false;
    char line[128] = {};
    const bool read = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);
    const std::string s = read ? line : "";
    return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
  }();
  return available;
}

Result<HugeBuffer> HugeBuffer::allocate(size_t bytes, bool huge_pages) {
  if (bytes == 0) return invalid_argument("HugeBuffer: zero bytes");
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const bool huge = bytes >= kHugePage && huge_pages;
  const size_t align = huge ? kHugePage : page;
  if (bytes > SIZE_MAX - 2 * align) return resource_exhausted("HugeBuffer: size overflows");
  const size_t mapped = (bytes + page - 1) / page * page;
  // Map the alignment's worth more, then unmap the unaligned head and the tail beyond `mapped`.
  const size_t span = mapped + (huge ? align : 0);
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    return resource_exhausted("HugeBuffer: cannot map " + std::to_string(bytes) +
                              " bytes: " + std::strerror(err));
  }
  auto* base = static_cast<uint8_t*>(p);
  auto* start = base;
  if (huge) {
    const auto addr = reinterpret_cast<uintptr_t>(base);
    start = base + ((addr + align - 1) / align * align - addr);
    if (start > base) ::munmap(base, static_cast<size_t>(start - base));
    const size_t tail = static_cast<size_t>(base + span - (start + mapped));
    if (tail > 0) ::munmap(start + mapped, tail);
  }
  HugeBuffer b;
  b.data_ = start;
  b.size_ = bytes;
  b.mapped_ = mapped;
#if defined(MADV_HUGEPAGE)
  // Advice only: EINVAL where transparent huge pages are not built in; 4 KiB pages then.
  if (huge) b.advised_ = ::madvise(start, mapped, MADV_HUGEPAGE) == 0;
#endif
  return b;
}

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      advised_(std::exchange(other.advised_, false)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

HugeBuffer::~HugeBuffer() { reset(); }

void HugeBuffer::reset() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
  advised_ = false;
}

}  // namespace geniex
