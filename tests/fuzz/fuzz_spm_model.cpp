// Fuzzes the SentencePiece model reader (src/convert/spm_model.cpp, tokenizer.model): any byte
// string must parse or fail with a Status; parsed pieces have a valid type.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "convert/spm_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex::convert;
  auto p = parse_spm_model(std::span<const uint8_t>(data, size));
  if (!p.ok()) return 0;
  for (const SpmPiece& s : *p) {
    const auto t = static_cast<int32_t>(s.type);
    if (t < 1 || t > 6 || s.text.size() > size) std::abort();
  }
  return 0;
}
