// The safetensors reader on hand-built files: valid single files and shards, and every kind of
// corruption the issue lists (truncation, header length past the file, bad JSON, unknown dtype,
// shape / offset mismatch, overlap, gaps) failing with a clear Status instead of crashing.
#include "convert/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace geniex::convert {
namespace {

std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}

std::vector<uint8_t> f32_bytes(std::initializer_list<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

// Two tensors: "b" F32 [2] at [0, 8), "a" F16 [1, 2] at [8, 12).
std::vector<uint8_t> valid_file() {
  std::vector<uint8_t> data = f32_bytes({1.5f, -2.0f});
  for (int b : {0x00, 0x3c, 0x00, 0xc0}) data.push_back(static_cast<uint8_t>(b));  // f16 1, -2
  return make_file(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F16","shape":[1,2],"data_offsets":[8,12]}})",
      data);
}

Status parse_status(const std::string& header, const std::vector<uint8_t>& data) {
  const auto bytes = make_file(header, data);
  return SafetensorsFile::parse(bytes, "t.safetensors").status();
}

TEST(Safetensors, ParsesTensorsSortedByName) {
  const auto bytes = valid_file();
  auto f = SafetensorsFile::parse(bytes, "t.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "a");
  EXPECT_EQ(f->tensors()[0].dtype, StDType::kF16);
  EXPECT_EQ(f->tensors()[0].shape, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(f->tensors()[0].n_elements, 2u);
  EXPECT_EQ(f->tensors()[0].data.size(), 4u);
  const StTensor* b = f->find("b");
  ASSERT_NE(b, nullptr);
  float v[2];
  std::memcpy(v, b->data.data(), 8);
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(f->find("c"), nullptr);
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(Safetensors, ScalarAndEmptyTensors) {
  const auto bytes = make_file(
      R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]}})",
      f32_bytes({3.0f}));
  auto f = SafetensorsFile::parse(bytes, "t");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->find("s")->n_elements, 1u);
  EXPECT_EQ(f->find("e")->n_elements, 0u);
}

// Files written by the `safetensors` PyPI package (tests/fuzz/make_safetensors_corpus.py).
TEST(Safetensors, ReadsFilesOfTheReferenceWriter) {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  const std::string dir =
      std::string(root != nullptr ? root : ".") + "/tests/fuzz/corpus/safetensors/";
  auto f = SafetensorsFile::open(dir + "dtypes.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->tensors().size(), 6u);
  const StTensor* t = f->find("f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<uint64_t>{2, 3}));
  float v[6];
  std::memcpy(v, t->data.data(), sizeof v);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], static_cast<float>(i));
  EXPECT_EQ(f->find("scalar")->dtype, StDType::kF64);
  EXPECT_EQ(f->find("empty")->n_elements, 0u);
  EXPECT_EQ(f->find("i64")->data.size(), 16u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  auto g = SafetensorsFile::open(dir + "layer.safetensors");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->tensors()[0].name, "model.layers.0.self_attn.q_proj.weight");
}

TEST(Safetensors, EveryTruncationFailsCleanly) {
  const auto bytes = valid_file();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = SafetensorsFile::parse(cut, "cut");
    EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(Safetensors, ShortFileAndHeaderLengthPastEnd) {
  const std::vector<uint8_t> tiny = {1, 2, 3};
  auto s = SafetensorsFile::parse(tiny, "tiny").status();
  EXPECT_NE(s.message().find("shorter than the 8-byte header length"), std::string::npos);
  auto bytes = valid_file();
  const uint64_t huge = bytes.size();  // header "longer" than what follows it
  std::memcpy(bytes.data(), &huge, 8);
  s = SafetensorsFile::parse(bytes, "long").status();
  EXPECT_NE(s.message().find("runs past the end"), std::string::npos) << s.message();
  const uint64_t over_cap = uint64_t{1} << 40;
  std::memcpy(bytes.data(), &over_cap, 8);
  s = SafetensorsFile::parse(bytes, "cap").status();
  EXPECT_NE(s.message().find("exceeds the limit"), std::string::npos) << s.message();
}

TEST(Safetensors, BadHeaders) {
  const auto data = f32_bytes({1.0f});
  struct Case {
    const char* header;
    const char* expect;
  };
  const Case cases[] = {
      {R"([1,2])", "not a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", "not valid JSON"},
      {R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "unknown dtype 'F33'"},
      {R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", "'dtype' must be a string"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "'shape' must be an array"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "needs 8 bytes"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "truncated file"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "begin > end"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "two non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[1]}})", "two non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", "unknown field 'x'"},
      {R"({"a":[1]})", "is not a JSON object"},
      {R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       "is not a string"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})",
       "overflows"},
      {R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", "dimensions"},
      {R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "empty name"},
  };
  for (const Case& c : cases) {
    const Status s = parse_status(c.header, data);
    EXPECT_FALSE(s.ok()) << c.header;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.header << " -> " << s.message();
  }
}

TEST(Safetensors, OverlapGapAndTrailingBytes) {
  const auto data = f32_bytes({1.0f, 2.0f});
  Status s = parse_status(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
      data);
  EXPECT_NE(s.message().find("overlaps"), std::string::npos) << s.message();
  s = parse_status(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data);
  EXPECT_NE(s.message().find("gap of 4 bytes"), std::string::npos) << s.message();
  s = parse_status(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data);
  EXPECT_NE(s.message().find("tensors cover 4"), std::string::npos) << s.message();
}

class ShardDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("geniex_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  void write_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

std::vector<uint8_t> one_tensor(const std::string& name, float v) {
  return make_file(R"({")" + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                   f32_bytes({v}));
}

TEST_F(ShardDir, SingleFile) {
  write("model.safetensors", one_tensor("x", 1.0f));
  auto m = SafetensorsModel::open_dir(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->tensors().size(), 1u);
  EXPECT_NE(m->find("x"), nullptr);
}

TEST_F(ShardDir, MissingModelIsNamed) {
  const Status s = SafetensorsModel::open_dir(dir_.string()).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model.safetensors"), std::string::npos) << s.message();
}

TEST_F(ShardDir, ShardsInFileOrder) {
  write("model-00002-of-00002.safetensors", one_tensor("a.late", 2.0f));
  write("model-00001-of-00002.safetensors", one_tensor("z.early", 1.0f));
  write_text("model.safetensors.index.json",
             R"({"metadata":{},"weight_map":{"a.late":"model-00002-of-00002.safetensors",)"
             R"("z.early":"model-00001-of-00002.safetensors"}})");
  auto m = SafetensorsModel::open_dir(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->tensors().size(), 2u);
  EXPECT_EQ(m->tensors()[0]->name, "z.early");  // shard 1 first, as llama.cpp's converter
  EXPECT_EQ(m->tensors()[1]->name, "a.late");
  EXPECT_EQ(m->files().size(), 2u);
}

TEST_F(ShardDir, MissingShardIsNamed) {
  write("model-00001-of-00002.safetensors", one_tensor("a", 1.0f));
  write_text(
      "model.safetensors.index.json",
      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
  const Status s = SafetensorsModel::open_dir(dir_.string()).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("model-00002-of-00002.safetensors"), std::string::npos) << s.message();
}

TEST_F(ShardDir, IndexAndShardsMustAgree) {
  write("model-00001-of-00001.safetensors", one_tensor("a", 1.0f));
  write_text("model.safetensors.index.json",
             R"({"weight_map":{"b":"model-00001-of-00001.safetensors"}})");
  Status s = SafetensorsModel::open_dir(dir_.string()).status();
  EXPECT_NE(s.message().find("'b' listed in the index is not in the shard"), std::string::npos)
      << s.message();
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"../x.safetensors"}})");
  s = SafetensorsModel::open_dir(dir_.string()).status();
  EXPECT_NE(s.message().find("is not a file in the directory"), std::string::npos) << s.message();
  write_text("model.safetensors.index.json", R"({"weight_map":)");
  s = SafetensorsModel::open_dir(dir_.string()).status();
  EXPECT_NE(s.message().find("not valid JSON"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace geniex::convert
