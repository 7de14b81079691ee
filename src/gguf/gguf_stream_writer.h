// A GGUF file written tensor by tensor: each tensor's data goes to a scratch file beside the
// output as it is added (one tensor in memory at a time), and finish() writes the header and
// the data into a temporary file that is renamed over the output. Nothing is left behind on
// failure or when finish() is never reached.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_value.h"
#include "gguf/gguf_writer.h"

namespace geniex::gguf {

class GgufStreamWriter {
 public:
  /// Opens the scratch file (`path` + ".data.tmp"). Tensors are laid out at the default
  /// alignment (32): metadata given to finish() must not set another general.alignment.
  static Result<GgufStreamWriter> create(std::string path);
  GgufStreamWriter(GgufStreamWriter&&) noexcept;
  GgufStreamWriter& operator=(GgufStreamWriter&&) = delete;
  GgufStreamWriter(const GgufStreamWriter&) = delete;
  ~GgufStreamWriter();

  /// Appends a tensor (checked as GgufWriter::add_tensor checks it).
  Status add_tensor(std::string name, GgmlType type, std::vector<uint64_t> ne,
                    std::span<const uint8_t> data);
  /// Header (metadata `kv` in order, then the tensors) + data -> `path`, atomically.
  Status finish(const std::vector<KeyValue>& kv);

 private:
  explicit GgufStreamWriter(std::string path, std::FILE* data);
  void discard();

  std::string path_;
  std::FILE* data_ = nullptr;
  std::vector<TensorHeader> tensors_;
  uint64_t data_bytes_ = 0;
};

}  // namespace geniex::gguf
