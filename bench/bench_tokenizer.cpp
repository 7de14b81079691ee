// Tokenizer throughput: encodes a text of about 1 MB (a file, or the Gemma corpus repeated)
// with a vocabulary GGUF, after one warm-up, and prints the median of the repetitions.
//
//   bench_tokenizer VOCAB.gguf [TEXT_FILE] [REPS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace geniex;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf [TEXT_FILE] [REPS]\n", argv[0]);
    return 2;
  }
  std::string text;
  if (argc >= 3) {
    text = read_all(argv[2]);
  } else {
    const char* src = std::getenv("GENIEX_SOURCE_DIR");
    const std::string seed =
        read_all(std::string(src ? src : ".") + "/tests/data/tokenizer/gemma3_corpus.txt");
    if (seed.empty()) {
      std::fprintf(stderr, "no text: pass TEXT_FILE or set GENIEX_SOURCE_DIR\n");
      return 2;
    }
    while (text.size() < (1u << 20)) text += seed;
    text.resize(1u << 20);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
      text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  }
  const int reps = argc >= 4 ? std::max(1, std::atoi(argv[3])) : 5;
  auto file = gguf::GgufFile::open(argv[1]);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().to_string().c_str());
    return 1;
  }
  auto tok = tokenizer::Tokenizer::from_gguf(*file);
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  std::vector<double> secs;
  size_t n_tokens = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    auto ids = (*tok)->encode(text, {.add_special = false, .parse_special = false});
    const auto t1 = std::chrono::steady_clock::now();
    if (!ids.ok()) {
      std::fprintf(stderr, "%s\n", ids.status().to_string().c_str());
      return 1;
    }
    n_tokens = ids->size();
    if (r > 0) secs.push_back(std::chrono::duration<double>(t1 - t0).count());  // r == 0: warm-up
  }
  std::sort(secs.begin(), secs.end());
  const double med = secs[secs.size() / 2];
  std::printf("vocab %s: %zu bytes -> %zu tokens; median %.3f s over %d runs (%.2f MB/s)\n",
              argv[1], text.size(), n_tokens, med, reps,
              static_cast<double>(text.size()) / med / 1e6);
  return 0;
}
