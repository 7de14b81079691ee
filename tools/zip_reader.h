// A small reader for the zip archives Python wheels are: the end-of-central-directory record,
// the central directory, and stored or deflated members (zlib's raw inflate) streamed out with
// their size and CRC-32 checked. Every offset and length is checked against the buffer; a
// corrupt or truncated archive is a DATA_LOSS Status, never a crash. Not supported (a clear
// UNIMPLEMENTED): ZIP64, multi-disk archives, encryption, methods other than stored/deflate.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace geniex::cli {

/// One member as the central directory describes it.
struct ZipEntry {
  std::string name;
  uint16_t flags = 0;   ///< general-purpose bit flags (bit 0: encrypted)
  uint16_t method = 0;  ///< 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

/// Receives a member's bytes in order; a non-OK Status stops the extraction and is returned.
using ZipSink = std::function<Status(std::span<const uint8_t>)>;

/// A parsed archive over bytes the caller keeps alive (e.g. a MappedFile).
class ZipArchive {
 public:
  /// Reads the central directory of `bytes`; `name` is used in error messages.
  static Result<ZipArchive> parse(std::span<const uint8_t> bytes, std::string name);

  [[nodiscard]] const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The member called `name` (exact path inside the archive), or nullptr.
  [[nodiscard]] const ZipEntry* find(std::string_view name) const;

  /// Streams `entry`'s uncompressed bytes to `sink` in pieces of at most 1 MiB. DATA_LOSS when
  /// the data is truncated, does not inflate, or its size or CRC-32 differs from the directory.
  [[nodiscard]] Status extract(const ZipEntry& entry, const ZipSink& sink) const;

 private:
  std::span<const uint8_t> bytes_;
  std::string name_;
  std::vector<ZipEntry> entries_;
};

}  // namespace geniex::cli
