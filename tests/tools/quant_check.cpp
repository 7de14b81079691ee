// quant_check: file-to-file access to the quant module for the Python judge tests.
//
//   quant_check dequant TYPE in.bin out.bin   raw blocks of TYPE -> little-endian f32
//   quant_check quant   TYPE in.bin out.bin   little-endian f32  -> raw blocks of TYPE
//
// TYPE is the gguf-py name (Q4_0, Q6_K, IQ4_XS, BF16, ...). Exit status 0 on success, 1 on a
// rejected input (the Status is printed to stderr), 2 on usage errors.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/quant.h"

namespace {

bool read_file(const char* path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !f.bad();
}

bool write_file(const char* path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return false;
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(f);
}

int usage() {
  std::fprintf(stderr, "usage: quant_check dequant|quant TYPE in.bin out.bin\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) return usage();
  const std::string mode = argv[1];
  const auto type = geniex::ggml_type_from_name(argv[2]);
  if (!type) {
    std::fprintf(stderr, "quant_check: unknown type %s\n", argv[2]);
    return 2;
  }
  std::vector<uint8_t> in;
  if (!read_file(argv[3], &in)) {
    std::fprintf(stderr, "quant_check: cannot read %s\n", argv[3]);
    return 1;
  }
  const auto& tr = geniex::traits(*type);
  if (mode == "dequant") {
    if (in.size() % tr.type_size != 0) {
      std::fprintf(stderr, "quant_check: %zu bytes is not a whole number of %s blocks\n", in.size(),
                   argv[2]);
      return 1;
    }
    std::vector<float> out(in.size() / tr.type_size * tr.block_size);
    const auto st = geniex::quant::dequantize_row(*type, in, out);
    if (!st.ok()) {
      std::fprintf(stderr, "quant_check: %s\n", st.to_string().c_str());
      return 1;
    }
    if (!write_file(argv[4], out.data(), out.size() * sizeof(float))) return 1;
  } else if (mode == "quant") {
    if (in.size() % sizeof(float) != 0) {
      std::fprintf(stderr, "quant_check: input is not a whole number of f32 values\n");
      return 1;
    }
    std::vector<float> x(in.size() / sizeof(float));
    if (!x.empty()) std::memcpy(x.data(), in.data(), in.size());
    const auto bytes = geniex::ggml_row_bytes(*type, x.size());
    if (!bytes) {
      std::fprintf(stderr, "quant_check: %zu values is not a whole number of %s blocks\n", x.size(),
                   argv[2]);
      return 1;
    }
    std::vector<uint8_t> out(static_cast<size_t>(*bytes));
    const auto st = geniex::quant::quantize_row(*type, x, out);
    if (!st.ok()) {
      std::fprintf(stderr, "quant_check: %s\n", st.to_string().c_str());
      return 1;
    }
    if (!write_file(argv[4], out.data(), out.size())) return 1;
  } else {
    return usage();
  }
  return 0;
}
