// Shared helpers of the models tests: test-data paths and GGUF rewriting via GgufWriter.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/real_model.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace geniex::models::test {

inline std::string source_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root ? root : ".";
}

inline std::string tiny_path(const std::string& arch, const std::string& type) {
  return source_dir() + "/tests/data/models/tiny-" + arch + "-" + type + ".gguf";
}

/// The real Gemma 3 270M (see tests/common/real_model.h).
inline std::string gemma_270m_path() { return testing_paths::real_model_path(); }

/// A parsed in-memory GGUF that owns its bytes.
struct OwnedGguf {
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
};

/// Edits applied while copying a file.
struct Rewrite {
  /// Return false to drop the key; may change the value.
  std::function<bool(const std::string& key, gguf::Value& value)> kv;
  /// Return false to drop the tensor.
  std::function<bool(const gguf::TensorInfo& t)> keep_tensor;
  /// Extra keys to set (after the copy).
  std::vector<gguf::KeyValue> extra_kv;
  /// Extra F32 tensors (zero-filled) to add: name and ne.
  std::vector<std::pair<std::string, std::vector<uint64_t>>> extra_f32;
};

inline OwnedGguf rewrite(const gguf::GgufFile& src, const Rewrite& r) {
  gguf::GgufWriter w;
  for (const auto& kv : src.metadata()) {
    gguf::Value v = kv.value;
    if (kv.key == "general.alignment") continue;  // the writer lays out data itself
    if (r.kv && !r.kv(kv.key, v)) continue;
    w.set(kv.key, v);
  }
  for (const auto& kv : r.extra_kv) w.set(kv.key, kv.value);
  for (const auto& t : src.tensors()) {
    if (r.keep_tensor && !r.keep_tensor(t)) continue;
    std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + std::max<uint32_t>(t.n_dims, 1));
    EXPECT_TRUE(w.add_tensor(t.name, t.type, ne, t.data).ok()) << t.name;
  }
  for (const auto& [name, ne] : r.extra_f32) {
    uint64_t n = 1;
    for (const uint64_t d : ne) n *= d;
    std::vector<uint8_t> zeros(n * sizeof(float));
    EXPECT_TRUE(w.add_tensor(name, GgmlType::kF32, ne, zeros).ok()) << name;
  }
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  OwnedGguf out{std::move(bytes.value()), {}};
  auto parsed = gguf::GgufFile::parse(out.bytes, "rewritten.gguf");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  out.file = std::move(parsed.value());
  return out;
}

}  // namespace geniex::models::test
