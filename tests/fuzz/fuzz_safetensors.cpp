// Fuzzes the safetensors reader (src/convert): any byte string must parse or fail with a
// Status, and whatever parses must hand out in-bounds, non-overlapping views whose sizes match
// their dtype and shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "convert/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex::convert;
  SafetensorsLimits limits;
  limits.max_header_bytes = 1u << 20;
  auto f = SafetensorsFile::parse(std::span<const uint8_t>(data, size), "fuzz", limits);
  if (!f.ok()) return 0;
  uint64_t covered = 0;
  for (const StTensor& t : f->tensors()) {
    if (t.data.size() != 0 &&
        (t.data.data() < data || t.data.data() + t.data.size() > data + size)) {
      std::abort();
    }
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    if (n != t.n_elements || n * st_dtype_size(t.dtype) != t.data.size()) std::abort();
    if (f->find(t.name) != &t) std::abort();
    covered += t.data.size();
  }
  if (covered > size) std::abort();  // views cannot overlap
  return 0;
}
