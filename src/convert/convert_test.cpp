// geniex convert end to end: the committed tiny llama checkpoint (tests/data/hf/llama) against
// the committed llama.cpp conversion of the same weights (tests/data/models/tiny-llama-*.gguf):
// same metadata (provenance keys aside), same tensor names, types, shapes and bytes. Plus the
// errors a user meets: missing files, unknown architectures, nothing left behind on failure.
#include "convert/convert.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "gguf/gguf_reader.h"

namespace geniex::convert {
namespace {

namespace fs = std::filesystem;

class ConvertDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("geniex_convert_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string source_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return root != nullptr ? root : ".";
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The committed tiny llama checkpoint is the source of the committed llama.cpp F32 conversion
// (scripts/goldens/make_tiny_hf_dirs.py checks that); ours must be the same file, byte for byte.
TEST_F(ConvertDir, TinyLlamaF32IsByteIdenticalToLlamaCpp) {
  const std::string out = (dir_ / "llama").string() + ".gguf";
  ConvertOptions opts;
  opts.outtype = OutType::kF32;
  auto r = convert_hf_to_gguf(source_dir() + "/tests/data/hf/llama", out, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gguf_arch, "llama");
  EXPECT_EQ(r->n_tensors, 31u);
  const auto ours = read_bytes(out);
  const auto theirs = read_bytes(source_dir() + "/tests/data/models/tiny-llama-f32.gguf");
  ASSERT_FALSE(theirs.empty());
  if (ours != theirs) {
    auto a = gguf::GgufFile::open(out);
    auto b = gguf::GgufFile::open(source_dir() + "/tests/data/models/tiny-llama-f32.gguf");
    ASSERT_TRUE(a.ok() && b.ok());
    for (size_t i = 0; i < std::min(a->metadata().size(), b->metadata().size()); ++i) {
      EXPECT_EQ(a->metadata()[i].key, b->metadata()[i].key);
      EXPECT_TRUE(a->metadata()[i].value == b->metadata()[i].value) << a->metadata()[i].key;
    }
    EXPECT_EQ(a->metadata().size(), b->metadata().size());
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (size_t i = 0; i < a->tensors().size(); ++i) {
      const auto& x = a->tensors()[i];
      const auto& y = b->tensors()[i];
      EXPECT_EQ(x.name, y.name);
      EXPECT_EQ(x.type, y.type) << x.name;
      EXPECT_TRUE(x.data.size() == y.data.size() &&
                  std::equal(x.data.begin(), x.data.end(), y.data.begin()))
          << x.name;
    }
    FAIL() << "files differ";
  }
}

// Hostile tokenizer / config JSON of the wrong shapes: a Status (error or success), never an
// exception or a crash; nothing is left behind on failure.
TEST_F(ConvertDir, HostileJsonNeverThrows) {
  const std::string src = source_dir() + "/tests/data/hf/llama";
  const char* tokenizers[] = {
      R"([])",
      R"({"model": []})",
      R"({"model": {"type": 7, "vocab": {}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": "x"}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 99999}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]},
          "pre_tokenizer": {"type": "Split", "pattern": {"Regex": 5}}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 1, "content": 2}]})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 1, "content": "x",
          "special": "yes"}], "post_processor": {"type": 3, "processors": 4},
          "normalizer": {"type": "Sequence", "normalizers": [1, {"type": 2}]}})",
  };
  const auto out = (dir_ / "o.gguf").string();
  for (const char* tj : tokenizers) {
    fs::remove_all(dir_ / "m");
    fs::create_directories(dir_ / "m");
    for (const char* f : {"config.json", "model.safetensors", "tokenizer_config.json"}) {
      fs::copy_file(src + "/" + f, dir_ / "m" / f);
    }
    std::ofstream(dir_ / "m" / "tokenizer.json") << tj;
    ConvertOptions opts;
    opts.tokenizer_pre = "llama-bpe";
    auto r = convert_hf_to_gguf((dir_ / "m").string(), out, opts);
    if (!r.ok()) {
      EXPECT_FALSE(fs::exists(out)) << tj;
      EXPECT_FALSE(fs::exists(out + ".tmp")) << tj;
    }
    fs::remove(out);
  }
  // config.json of the wrong kinds
  const char* configs[] = {
      R"({"architectures": ["LlamaForCausalLM"]})",
      R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": -1, "num_attention_heads": 4,
          "num_key_value_heads": 2, "hidden_size": 64, "vocab_size": 2048})",
      R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 3, "num_attention_heads": 0,
          "num_key_value_heads": 2, "hidden_size": 64, "vocab_size": 2048})",
      R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1, "num_attention_heads": 4,
          "num_key_value_heads": 2, "hidden_size": 64, "vocab_size": 2048, "rope_parameters": 3,
          "rms_norm_eps": "x", "head_dim": "y"})",
      R"({"architectures": ["Lfm2ForCausalLM"], "num_hidden_layers": 2, "layer_types": [1, 2]})",
      R"({"architectures": ["Gemma3ForCausalLM"], "num_hidden_layers": 2, "head_dim": -3})",
  };
  for (const char* cfg : configs) {
    fs::remove_all(dir_ / "m");
    fs::create_directories(dir_ / "m");
    for (const char* f : {"tokenizer.json", "model.safetensors", "tokenizer_config.json"}) {
      fs::copy_file(src + "/" + f, dir_ / "m" / f);
    }
    std::ofstream(dir_ / "m" / "config.json") << cfg;
    auto r = convert_hf_to_gguf((dir_ / "m").string(), out);
    EXPECT_FALSE(r.ok()) << cfg;
    EXPECT_FALSE(fs::exists(out)) << cfg;
  }
}

TEST(ConvertNames, SizeLabelAsGgufPy) {
  EXPECT_EQ(size_label(373'000), "373K");
  EXPECT_EQ(size_label(1'500), "1.5K");
  EXPECT_EQ(size_label(135'000'000), "135M");
  EXPECT_EQ(size_label(1'240'000'000), "1.2B");
  EXPECT_EQ(size_label(8'030'000'000), "8.0B");
}

TEST(ConvertNames, NameFromDirectory) {
  EXPECT_EQ(name_from_dir("/x/llama"), "Llama");
  EXPECT_EQ(name_from_dir("/x/tiny-llama/"), "Tiny Llama");
  EXPECT_EQ(name_from_dir("Qwen3-0.6B"), "Qwen3 0.6B");
  EXPECT_EQ(name_from_dir("my-model-v2"), "My Model v2");
  EXPECT_EQ(name_from_dir("x-v2.1"), "X v2.1");
  EXPECT_EQ(name_from_dir("x-v2."), "X V2.");
  EXPECT_EQ(name_from_dir("lfm2vl"), "Lfm2Vl");
  EXPECT_EQ(name_from_dir("a-7b"), "A 7b");
}

TEST(TensorEncode, DecodesF16AndBf16Sources) {
  const uint8_t f16[] = {0x00, 0x3c, 0x00, 0xc0};   // 1.0, -2.0
  const uint8_t bf16[] = {0x80, 0x3f, 0x40, 0xc0};  // 1.0, -3.0
  StTensor t;
  t.name = "w";
  t.n_elements = 2;
  t.shape = {2};
  t.dtype = StDType::kF16;
  t.data = f16;
  auto a = decode_to_f32(t);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<float>{1.0f, -2.0f}));
  t.dtype = StDType::kBF16;
  t.data = bf16;
  auto b = decode_to_f32(t);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<float>{1.0f, -3.0f}));
  t.dtype = StDType::kI32;
  EXPECT_EQ(decode_to_f32(t).status().code(), StatusCode::kUnimplemented);
}

TEST(TensorEncode, LlamaCppTypeRules) {
  EXPECT_EQ(choose_type("blk.0.attn_norm.weight", 1, 64, OutType::kQ8_0), GgmlType::kF32);
  EXPECT_EQ(choose_type("blk.0.attn_q.bias", 1, 64, OutType::kF16), GgmlType::kF32);
  EXPECT_EQ(choose_type("blk.0.attn_q.weight", 2, 64, OutType::kQ8_0), GgmlType::kQ8_0);
  EXPECT_EQ(choose_type("mm.2.weight", 2, 48, OutType::kQ8_0), GgmlType::kF16);  // 48 % 32
  EXPECT_EQ(choose_type("blk.0.shortconv.conv.weight", 2, 3, OutType::kF16), GgmlType::kF32);
  EXPECT_EQ(choose_type("token_embd.weight", 2, 64, OutType::kBF16), GgmlType::kBF16);
  EXPECT_EQ(choose_type("output.weight", 2, 64, OutType::kF32), GgmlType::kF32);
  auto q = encode(std::vector<float>(64, 1.0f), 32, GgmlType::kQ8_0);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->size(), 2u * 34u);
  EXPECT_FALSE(encode(std::vector<float>(48, 1.0f), 48, GgmlType::kQ8_0).ok());
}

TEST(ConvertOutType, Parse) {
  EXPECT_EQ(*parse_outtype("q8_0"), OutType::kQ8_0);
  EXPECT_EQ(*parse_outtype("bf16"), OutType::kBF16);
  EXPECT_FALSE(parse_outtype("q4_0").ok());
}

TEST_F(ConvertDir, MissingConfigIsNamed) {
  const auto out = (dir_ / "out.gguf").string();
  const Status s = convert_hf_to_gguf(dir_.string(), out).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("config.json"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(ConvertDir, UnknownArchitectureIsNamed) {
  std::ofstream(dir_ / "config.json") << R"({"architectures":["FancyNetForCausalLM"]})";
  const auto out = (dir_ / "out.gguf").string();
  const Status s = convert_hf_to_gguf(dir_.string(), out).status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("FancyNetForCausalLM"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(ConvertDir, ConfigWithoutArchitectures) {
  std::ofstream(dir_ / "config.json") << R"({"hidden_size": 8})";
  const Status s = convert_hf_to_gguf(dir_.string(), (dir_ / "o.gguf").string()).status();
  EXPECT_NE(s.message().find("architectures"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace geniex::convert
