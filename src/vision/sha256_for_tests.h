// SHA-256 of a byte string, for comparing preprocessing output with the hashes in the goldens
// (test-only; avoids an OpenSSL dependency in cross builds).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace geniex::vision::testing {

/// Lower-case hex SHA-256 (FIPS 180-4) of `bytes`.
std::string sha256_hex(std::span<const uint8_t> bytes);

}  // namespace geniex::vision::testing
