// Test helpers shared by the tokenizer tests: locating tests/data/tokenizer and loading vocabs.
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gguf/gguf_reader.h"
#include "tokenizer/tokenizer.h"

namespace geniex::tokenizer::testing {

inline std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/tests/data/tokenizer";
}

inline bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

/// Loads tests/data/tokenizer/ggml-vocab-<name>.gguf; null (and a message) when it fails.
inline std::shared_ptr<const Tokenizer> load_vocab_file(const std::string& name,
                                                        std::string* error = nullptr) {
  auto file = gguf::GgufFile::open(data_dir() + "/ggml-vocab-" + name + ".gguf");
  if (!file.ok()) {
    if (error != nullptr) *error = file.status().to_string();
    return nullptr;
  }
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) {
    if (error != nullptr) *error = tok.status().to_string();
    return nullptr;
  }
  return *tok;
}

}  // namespace geniex::tokenizer::testing
