#include "core/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/regular_file.h"

namespace geniex {

Result<MappedFile> MappedFile::open(const std::string& path) {
  // Only regular files, opened without blocking (a FIFO would hang here).
  GENIEX_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  MappedFile mf;
  mf.path_ = path;
  mf.size_ = static_cast<size_t>(file.size());
  if (mf.size_ > 0) {
    void* p = ::mmap(nullptr, mf.size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) return io_error(path + ": mmap failed: " + std::strerror(errno));
    mf.data_ = static_cast<const uint8_t*>(p);
  }
  return mf;  // the mapping keeps the file alive after `file` closes it
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace geniex
