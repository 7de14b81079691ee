// GGUF v3 writer: metadata in insertion order, tensors laid out sequentially at the file's
// alignment (general.alignment if set, else 32) — the layout llama.cpp's reader verifies.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/gguf_value.h"

namespace geniex::gguf {

/// A tensor's entry in the header, for writers that stream the data themselves.
struct TensorHeader {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> ne;  ///< ne[0] first; as many dims as the file records
};

/// The header of a GGUF v3 file (magic through the padding before the data section) for
/// tensors laid out in order at the file's alignment (general.alignment if set, else 32).
/// `data_bytes_out` receives the data section's size, each tensor padded to the alignment.
[[nodiscard]] Result<std::vector<uint8_t>> serialize_header(
    const std::vector<KeyValue>& kv, const std::vector<TensorHeader>& tensors,
    uint64_t* alignment_out, uint64_t* data_bytes_out);

/// Builds a GGUF file in memory or on disk. Keys and tensor names must be unique.
class GgufWriter {
 public:
  /// Adds (or replaces) a metadata entry; order of first insertion is kept.
  void set(std::string key, Value value);
  /// Adds a tensor; `ne` lists dims with ne[0] the contiguous one; `data` is copied and must
  /// be exactly the tensor's byte size.
  Status add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne,
                    std::span<const uint8_t> data);

  /// The metadata set so far, in order (for GgufStreamWriter::finish).
  [[nodiscard]] const std::vector<KeyValue>& metadata() const { return kv_; }
  /// The complete file image.
  [[nodiscard]] Result<std::vector<uint8_t>> to_bytes() const;
  /// Writes the file (to a temporary beside it, then renamed, so a failure loses nothing).
  [[nodiscard]] Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> ne;
    std::vector<uint8_t> data;
  };
  std::vector<KeyValue> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace geniex::gguf
