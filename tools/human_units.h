// Sizes and counts for people: 241.4 MiB, 268.1M (inspect and list tables).
#pragma once

#include <cstdint>
#include <string>

namespace geniex::cli {

/// Bytes in powers of 1024 ("512 B", "241.38 MiB" with decimals = 2).
std::string human_bytes(uint64_t n, int decimals);

/// A count in powers of 1000 ("268.1M" with decimals = 1); below 1000 the plain number.
std::string human_count(uint64_t n, int decimals);

}  // namespace geniex::cli
