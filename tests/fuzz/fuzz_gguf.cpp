// Fuzzes the GGUF reader: any byte string must parse or fail with a Status, and whatever
// parses must have in-bounds tensor views and printable, re-writable metadata.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace geniex;
  gguf::ReaderLimits limits;
  limits.max_string = 1u << 20;
  auto f = gguf::GgufFile::parse(std::span<const uint8_t>(data, size), "fuzz", limits);
  if (!f.ok()) return 0;
  gguf::GgufWriter w;
  for (const auto& kv : f->metadata()) {
    (void)kv.value.to_display();
    (void)f->get_uint(kv.key);
    (void)f->get_float_array(kv.key);
    w.set(kv.key, kv.value);
  }
  for (const auto& t : f->tensors()) {
    if (t.data.data() < data || t.data.data() + t.data.size() > data + size) std::abort();
    if (t.n_bytes != t.data.size()) std::abort();
    if (!w.add_tensor(t.name, t.type, {t.ne.begin(), t.ne.begin() + t.n_dims}, t.data).ok()) {
      std::abort();  // anything the reader accepts, the writer must accept
    }
  }
  auto bytes = w.to_bytes();
  if (!bytes.ok()) std::abort();
  auto again = gguf::GgufFile::parse(*bytes, "rewritten", limits);
  if (!again.ok() || again->metadata() != f->metadata() ||
      again->tensors().size() != f->tensors().size()) {
    std::abort();  // reader(writer(x)) == x
  }
  return 0;
}
