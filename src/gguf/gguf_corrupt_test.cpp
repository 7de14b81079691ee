// Malformed files: every one gets a DATA_LOSS Status naming the file and the field, never a
// crash or an allocation sized by the bad field (ASan/UBSan runs of this suite check that).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace geniex::gguf {
namespace {

// Builds GGUF bytes field by field, so tests can write what no valid writer would.
class Raw {
 public:
  template <typename T>
  Raw& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
    return *this;
  }
  Raw& str(const std::string& s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return put<uint32_t>(kMagic).put<uint32_t>(version).put(n_tensors).put(n_kv);
  }
  Raw& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put(v); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t off) {
    str(name).put(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put(d);
    return put(type).put(off);
  }
  Raw& pad(size_t align) {
    while (b_.size() % align) b_.push_back(0);
    return *this;
  }
  Raw& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  [[nodiscard]] const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

Status parse_status(const std::vector<uint8_t>& b) {
  auto r = GgufFile::parse(b, "bad.gguf");
  return r.status();
}

void expect_error(const std::vector<uint8_t>& b, const std::string& fragment) {
  const Status s = parse_status(b);
  ASSERT_FALSE(s.ok()) << "expected an error containing '" << fragment << "'";
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("bad.gguf"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
}

TEST(GgufCorrupt, ValidBaselineParses) {
  Raw r;
  r.header(1, 1).kv_u32("general.alignment", 32).tensor("w", {32}, 8, 0).pad(32).zeros(34);
  EXPECT_TRUE(parse_status(r.bytes()).ok()) << parse_status(r.bytes()).to_string();
}

TEST(GgufCorrupt, HeaderProblems) {
  expect_error({}, "too short");
  expect_error({'G', 'G', 'U'}, "too short");
  expect_error(Raw().put<uint32_t>(0x4C4C5546).put<uint32_t>(3).bytes(), "bad magic");
  expect_error(Raw().header(0, 0, 1).bytes(), "unsupported GGUF version 1");
  expect_error(Raw().header(0, 0, 4).bytes(), "unsupported GGUF version 4");
  expect_error(Raw().header(0, 0, 0x03000000).bytes(), "unsupported GGUF version");
  expect_error(Raw().put<uint32_t>(kMagic).put<uint32_t>(3).put<uint32_t>(0).bytes(),
               "tensor count");
  expect_error(Raw().header(0, 1ull << 62).bytes(), "metadata count");
  expect_error(Raw().header(1ull << 62, 0).bytes(), "tensor count");
  expect_error(Raw().header(0, 1000).bytes(), "do not fit");
}

TEST(GgufCorrupt, MetadataProblems) {
  expect_error(Raw().header(0, 1).put<uint64_t>(1ull << 40).zeros(16).bytes(), "metadata #0 key");
  expect_error(Raw().header(0, 1).str("k").put<uint32_t>(13).zeros(8).bytes(),
               "unknown value type 13");
  expect_error(Raw().header(0, 1).str("k").put<uint32_t>(4).put<uint16_t>(1).bytes(),
               "metadata 'k'");
  expect_error(Raw().header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(~0ull).bytes(),
               "string length");
  // An array claiming 2^61 UINT64 elements must be rejected before anything is allocated.
  expect_error(Raw()
                   .header(0, 1)
                   .str("k")
                   .put<uint32_t>(9)
                   .put<uint32_t>(10)
                   .put<uint64_t>(1ull << 61)
                   .zeros(16)
                   .bytes(),
               "does not fit");
  expect_error(Raw()
                   .header(0, 1)
                   .str("k")
                   .put<uint32_t>(9)
                   .put<uint32_t>(8)
                   .put<uint64_t>(1ull << 40)
                   .zeros(16)
                   .bytes(),
               "does not fit");
  expect_error(Raw()
                   .header(0, 1)
                   .str("k")
                   .put<uint32_t>(9)
                   .put<uint32_t>(9)
                   .put<uint64_t>(1)
                   .zeros(16)
                   .bytes(),
               "nested arrays");
  expect_error(Raw()
                   .header(0, 1)
                   .str("k")
                   .put<uint32_t>(9)
                   .put<uint32_t>(77)
                   .put<uint64_t>(1)
                   .zeros(16)
                   .bytes(),
               "unknown value type 77");
  expect_error(Raw().header(0, 2).kv_u32("k", 1).kv_u32("k", 2).bytes(), "duplicate key");
  expect_error(Raw().header(0, 1).str("").put<uint32_t>(4).put<uint32_t>(1).bytes(), "empty key");
  expect_error(Raw().header(0, 1).kv_u32("general.alignment", 48).bytes(), "power-of-two");
  expect_error(Raw().header(0, 1).kv_u32("general.alignment", 0).bytes(), "power-of-two");
  expect_error(Raw().header(0, 1).str("general.alignment").put<uint32_t>(8).str("32").bytes(),
               "general.alignment");
}

TEST(GgufCorrupt, TensorInfoProblems) {
  auto one = [](std::vector<uint64_t> ne, uint32_t type, uint64_t off, size_t data) {
    Raw r;
    r.header(1, 0).tensor("blk.0.w", std::move(ne), type, off).pad(32).zeros(data);
    return r.bytes();
  };
  expect_error(one({}, 0, 0, 64), "n_dims is 0");
  expect_error(one({1, 1, 1, 1, 1}, 0, 0, 64), "n_dims is 5");
  expect_error(one({~0ull}, 0, 0, 64), "negative or absurd");
  expect_error(one({1ull << 32, 1ull << 32}, 0, 0, 64), "overflows");
  expect_error(one({32}, 4, 0, 64), "unknown tensor type id 4");
  expect_error(one({32}, 99, 0, 64), "unknown tensor type id 99");
  expect_error(one({33}, 2, 0, 64), "not a multiple of the Q4_0 block size");
  expect_error(one({8}, 0, 16, 64), "not a multiple of the alignment");
  expect_error(one({8}, 0, 0, 16), "outside the file");
  expect_error(one({8}, 0, 1ull << 63, 64), "outside the file");
  expect_error(one({8}, 0, ~0ull - 31, 64), "outside the file");
  Raw dup;
  dup.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad(32).zeros(64);
  expect_error(dup.bytes(), "duplicate tensor name");
  Raw longname;
  longname.header(1, 0).tensor(std::string(64, 'x'), {8}, 0, 0).pad(32).zeros(32);
  expect_error(longname.bytes(), "the limit is 63");
  Raw nodata;
  nodata.header(1, 0).tensor("w", {8}, 0, 0);
  expect_error(nodata.bytes(), "past the end of the file");
}

std::vector<uint8_t> valid_file() {
  GgufWriter w;
  w.set("general.architecture", Value::of_string("llama"));
  w.set("llama.context_length", Value::of_uint(ValueType::kUint32, 2048));
  w.set("tokenizer.ggml.tokens", Value::of_string_array({"a", "bb", "ccc"}));
  w.set("tokenizer.ggml.scores", Value::of_float_array(ValueType::kFloat32, {0, 1, 2}));
  std::vector<uint8_t> d(4 * 64, 7);
  EXPECT_TRUE(w.add_tensor("token_embd.weight", GgmlType::kF32, {16, 4}, d).ok());
  std::vector<uint8_t> q(2 * 34, 1);
  EXPECT_TRUE(w.add_tensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {32, 2}, q).ok());
  return *w.to_bytes();
}

// Every prefix of a valid file that cuts into its metadata or tensor data is rejected
// cleanly; only the trailing padding after the last tensor may go missing.
TEST(GgufCorrupt, EveryTruncationIsAnError) {
  const auto full = valid_file();
  auto f = GgufFile::parse(full, "full.gguf");
  ASSERT_TRUE(f.ok());
  const auto& last = f->tensors().back();
  const size_t data_end = f->data_offset() + last.offset + last.n_bytes;
  ASSERT_LT(data_end, full.size());  // the file has trailing padding
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    const Status s = parse_status(cut);
    EXPECT_FALSE(s.ok()) << "prefix of " << n << " bytes parsed";
  }
}

// Random byte corruption never crashes; whatever parses has in-bounds tensor views.
TEST(GgufCorrupt, RandomMutationsNeverCrash) {
  const auto full = valid_file();
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    auto b = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      b[rng() % b.size()] = static_cast<uint8_t>(rng());
    }
    auto r = GgufFile::parse(b, "mut.gguf");
    if (!r.ok()) continue;
    ++parsed;
    for (const auto& t : r->tensors()) {
      ASSERT_GE(t.data.data(), b.data());
      ASSERT_LE(t.data.data() + t.data.size(), b.data() + b.size());
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations only touch values or tensor data
}

TEST(GgufOpen, MissingFileAndDirectory) {
  auto r = GgufFile::open("/nonexistent/x.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/x.gguf"), std::string::npos);
  auto d = GgufFile::open("/tmp");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace geniex::gguf
