// Fuzzes the wheel (zip) reader of `geniex pull`: any byte string must parse or fail with a
// Status, and every member of what parses must extract or fail with a Status; a member that
// extracts has exactly its declared size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex;
  auto zip = cli::ZipArchive::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!zip.ok()) return 0;
  size_t tried = 0;
  for (const cli::ZipEntry& e : zip->entries()) {
    // Members may overlap; bound the work per input (extraction stops at the declared size).
    if (e.uncompressed_size > (uint64_t{8} << 20)) continue;
    if (++tried > 16) break;
    uint64_t got = 0;
    const Status s = zip->extract(e, [&](std::span<const uint8_t> piece) {
      if (piece.empty()) std::abort();  // the sink only sees bytes
      got += piece.size();
      return Status::ok_status();
    });
    if (s.ok() && got != e.uncompressed_size) std::abort();
  }
  return 0;
}
