// Reader of the safetensors format (Hugging Face checkpoints): an 8-byte little-endian header
// length, a JSON header naming every tensor's dtype, shape and [begin, end) byte range in the
// data area, then the data. Every field is validated before a view is handed out: the header
// length against the file, dtype names, shapes (overflow-checked) against byte ranges, and the
// ranges themselves (in bounds, no overlap, no gap — the reference implementation's rule).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"

namespace geniex::convert {

/// Element types of the safetensors format.
enum class StDType {
  kBool,
  kU8,
  kI8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E4M3,
  kF8E5M2,
};

/// "F32", "BF16", ... as written in headers.
std::string_view st_dtype_name(StDType t);
/// Bytes per element.
size_t st_dtype_size(StDType t);

/// One tensor of a safetensors file: a view into the file's bytes.
struct StTensor {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<uint64_t> shape;    ///< row-major, outermost first (as in PyTorch)
  std::span<const uint8_t> data;  ///< exactly product(shape) * element size bytes
  uint64_t n_elements = 0;
};

/// Limits for untrusted input.
struct SafetensorsLimits {
  uint64_t max_header_bytes = 100u << 20;  ///< the reference implementation's cap (100 MB)
  size_t max_dims = 8;
};

/// A parsed safetensors file. Tensors are sorted by name.
class SafetensorsFile {
 public:
  /// Maps and parses `path`.
  static Result<SafetensorsFile> open(const std::string& path,
                                      const SafetensorsLimits& limits = {});
  /// Parses bytes owned by the caller (they must outlive the result); `name` labels errors.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, std::string name,
                                       const SafetensorsLimits& limits = {});

  [[nodiscard]] const std::vector<StTensor>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  [[nodiscard]] const StTensor* find(std::string_view name) const;
  /// The optional "__metadata__" string map.
  [[nodiscard]] const std::map<std::string, std::string>& metadata() const { return metadata_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::shared_ptr<MappedFile> file_;  // keeps the mapping alive for the views (null in parse)
  std::string name_;
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// All tensors of a checkpoint directory: `model.safetensors`, or the shards listed by
/// `model.safetensors.index.json` (each shard's tensors must be exactly those the index maps
/// to it). Tensors come in llama.cpp's converter order: shards by file name, names sorted
/// within a shard.
class SafetensorsModel {
 public:
  static Result<SafetensorsModel> open_dir(const std::string& dir,
                                           const SafetensorsLimits& limits = {});

  [[nodiscard]] const std::vector<const StTensor*>& tensors() const { return order_; }
  [[nodiscard]] const StTensor* find(std::string_view name) const;
  /// The files read, in order.
  [[nodiscard]] std::vector<std::string> files() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::vector<const StTensor*> order_;
  std::map<std::string, const StTensor*, std::less<>> by_name_;
};

}  // namespace geniex::convert
