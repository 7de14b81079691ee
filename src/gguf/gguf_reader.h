// GGUF v2/v3 reader. Parses the header, metadata and tensor table of a memory-mapped file
// with every offset, count and size checked before use; tensors are zero-copy views.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "gguf/gguf_value.h"

namespace geniex::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr size_t kMaxNameLength = 63;  // llama.cpp: strlen(name) < GGML_MAX_NAME (64)

/// One tensor of the file; `data` points into the mapping (valid while the GgufFile lives).
struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, kMaxDims> ne{1, 1, 1, 1};  ///< ne[0] is the contiguous dimension
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;  ///< relative to the data section
  uint64_t n_bytes = 0;
  std::span<const uint8_t> data;

  [[nodiscard]] uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

/// Limits a parse enforces beyond the format itself (defaults are generous but finite).
struct ReaderLimits {
  uint64_t max_kv = 1u << 20;
  uint64_t max_tensors = 1u << 20;
  uint64_t max_string = 1u << 28;  // 256 MiB
};

/// A parsed GGUF file. Owns its mapping when opened from a path; a file parsed from a
/// caller's buffer borrows it.
class GgufFile {
 public:
  /// Maps and parses `path`.
  static Result<GgufFile> open(const std::string& path, const ReaderLimits& limits = {});
  /// Parses bytes the caller keeps alive; `name` is used in error messages.
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::string name,
                                const ReaderLimits& limits = {});

  [[nodiscard]] uint32_t version() const { return version_; }
  [[nodiscard]] uint32_t alignment() const { return alignment_; }
  /// Absolute file offset of the tensor data section.
  [[nodiscard]] uint64_t data_offset() const { return data_offset_; }
  [[nodiscard]] uint64_t file_size() const { return bytes_.size(); }
  [[nodiscard]] const std::string& name() const { return name_; }

  [[nodiscard]] const std::vector<KeyValue>& metadata() const { return kv_; }
  [[nodiscard]] const std::vector<TensorInfo>& tensors() const { return tensors_; }

  /// The value of `key`, or nullptr.
  [[nodiscard]] const Value* find(std::string_view key) const;
  /// The tensor called `name`, or nullptr.
  [[nodiscard]] const TensorInfo* find_tensor(std::string_view name) const;

  // Typed accessors with errors that name the file and key.
  [[nodiscard]] Result<uint64_t> get_uint(std::string_view key) const;
  [[nodiscard]] Result<int64_t> get_int(std::string_view key) const;
  [[nodiscard]] Result<double> get_float(std::string_view key) const;
  [[nodiscard]] Result<bool> get_bool(std::string_view key) const;
  [[nodiscard]] Result<std::string> get_string(std::string_view key) const;
  [[nodiscard]] Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  [[nodiscard]] Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  [[nodiscard]] Result<std::vector<float>> get_float_array(std::string_view key) const;
  /// Like get_uint but returns `fallback` when the key is absent (errors on a wrong type).
  [[nodiscard]] Result<uint64_t> get_uint_or(std::string_view key, uint64_t fallback) const;

 private:
  friend class Parser;

  std::shared_ptr<MappedFile> mapping_;  // null when parsing a borrowed buffer
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace geniex::gguf
