// Fuzzes the tokenizer: any byte string either fails encode() with INVALID_ARGUMENT (not
// UTF-8) or encodes with parse_special on and off; the ids decode, and streaming the ids
// one by one yields exactly decode()'s text. The input bytes are also read as raw ids to
// stream-decode arbitrary sequences (byte tokens, controls, BOS/EOS anywhere).
// Vocabularies: tests/data/tokenizer under $GENIEX_SOURCE_DIR (or the compiled-in
// GENIEX_SOURCE_DIR).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace {

using geniex::tokenizer::DecodeOptions;
using geniex::tokenizer::Tokenizer;

std::string source_dir() {
  if (const char* env = std::getenv("GENIEX_SOURCE_DIR"); env != nullptr && *env != '\0')
    return env;
#ifdef GENIEX_SOURCE_DIR
  return GENIEX_SOURCE_DIR;
#else
  return ".";
#endif
}

std::shared_ptr<const Tokenizer> load(const char* name) {
  const std::string path = source_dir() + "/tests/data/tokenizer/ggml-vocab-" + name + ".gguf";
  auto file = geniex::gguf::GgufFile::open(path);
  if (!file.ok()) std::abort();  // setup error, not a finding
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) std::abort();
  return *tok;
}

const std::vector<std::shared_ptr<const Tokenizer>>& vocabs() {
  static const auto* v = new std::vector<std::shared_ptr<const Tokenizer>>{
      load("llama-spm"), load("gpt-2"), load("phi-3"), load("bert-bge")};
  return *v;
}

void check_stream(const Tokenizer& t, const std::vector<int32_t>& ids, DecodeOptions o) {
  auto want = t.decode(ids, o);
  if (!want.ok()) std::abort();
  auto d = t.stream_decoder(o);
  std::string got;
  for (int32_t id : ids) {
    auto piece = d.feed(id);
    if (!piece.ok()) std::abort();
    got += *piece;
  }
  got += d.flush();
  if (got != *want) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& all = vocabs();
  const Tokenizer& t = *all[data[0] % all.size()];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  for (bool parse_special : {false, true}) {
    auto ids = t.encode(text, {.add_special = parse_special, .parse_special = parse_special});
    if (!ids.ok()) {
      if (ids.status().code() != geniex::StatusCode::kInvalidArgument) std::abort();
      if (geniex::tokenizer::utf8_valid(text)) std::abort();  // valid text must encode
      break;
    }
    for (int32_t id : *ids) {
      if (id < 0 || id >= t.n_vocab()) std::abort();
    }
    check_stream(t, *ids, {});
    check_stream(t, *ids, {.remove_special = true, .render_special = parse_special});
  }

  // The same bytes as raw ids.
  std::vector<int32_t> raw;
  for (size_t i = 1; i + 2 <= size; i += 2) {
    uint16_t v = 0;
    std::memcpy(&v, data + i, 2);
    raw.push_back(static_cast<int32_t>(v % static_cast<uint32_t>(t.n_vocab())));
  }
  check_stream(t, raw, {});
  check_stream(t, raw, {.remove_special = true, .render_special = true});
  return 0;
}
