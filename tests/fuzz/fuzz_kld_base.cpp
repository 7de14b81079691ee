// Fuzzes the KL-divergence base-file reader (llama.cpp's format): any byte string must be
// accepted or refused with a Status, and whatever is accepted must have every token and row
// inside the input (ASan checks the reads).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "eval/kld_base_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex;
  auto r = eval::KldBaseReader::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!r.ok()) return 0;
  if (eval::kld_file_bytes(r->n_ctx(), r->n_vocab(), r->n_chunk()) != static_cast<int64_t>(size)) {
    std::abort();  // accepted only at exactly the size its header announces
  }
  uint64_t sum = 0;
  for (int32_t c = 0; c < r->n_chunk(); ++c) {
    for (int32_t t : r->chunk_tokens(c)) sum += static_cast<uint32_t>(t);
    for (int64_t i = 0; i < eval::scored_per_chunk(r->n_ctx()); ++i) {
      const auto row = r->row(c, i);
      if (reinterpret_cast<const uint8_t*>(row.data()) < data ||
          reinterpret_cast<const uint8_t*>(row.data() + row.size()) > data + size) {
        std::abort();
      }
      sum += row.front() + row.back();
    }
  }
  volatile uint64_t keep = sum;
  (void)keep;
  return 0;
}
