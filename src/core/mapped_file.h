// Read-only memory map of a whole file (RAII). Tensors are views into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace geniex {

/// A read-only mapping of a file; unmapped on destruction. Movable, not copyable.
class MappedFile {
 public:
  /// Maps `path`. An empty file gives an empty span (no mapping).
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] std::span<const uint8_t> bytes() const { return {data_, size_}; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace geniex
