// LFM2-VL through the public API on the tiny random-weight model (tests/data/models/
// tiny-lfm2vl.json): prompt ids and logits against transformers 5.23.0 for an untiled image, a
// resized one, 3x2 tiles + thumbnail, a 2000x100 strip and three images in one prompt; images in
// chat messages; the prefix cache telling images apart; and every bad-image case answering a
// clear error while the model stays usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "geniex/geniex.hpp"
#include "models/npy.h"
#include "models/test_util.h"
#include "vision/image_decode.h"

namespace geniex {
namespace {

std::string root() {
  const char* r = std::getenv("GENIEX_SOURCE_DIR");
  return r ? r : ".";
}
std::string data_dir() { return root() + "/tests/data/models"; }
std::string vision_dir() { return root() + "/tests/data/vision"; }
std::string text_path() { return data_dir() + "/tiny-lfm2vl-f32.gguf"; }
std::string mmproj_path() { return data_dir() + "/mmproj-tiny-lfm2vl-f32.gguf"; }

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    std::ifstream in(data_dir() + "/tiny-lfm2vl.json");
    EXPECT_TRUE(in.good());
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The tiny LFM2-VL with its mmproj, an F32 KV cache and a 4096-token context.
Result<Model> build_vl() {
  return ModelBuilder(text_path())
      .with_mmproj(mmproj_path())
      .with_device(Device::cpu())
      .with_threads(2)
      .with_context_size(4096)
      .with_kv_cache_type(KvCacheType::kF32)
      .build();
}

// One model shared by the tests that only read it or reset it first.
Model& model() {
  static Model m = [] {
    auto r = build_vl();
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(*r);
  }();
  return m;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// 24-bit BMP of an RGB buffer (rows bottom-up, padded to 4 bytes): lossless bytes for an image
// that exists only in memory.
std::vector<uint8_t> bmp(const std::vector<uint8_t>& rgb, int w, int h) {
  const int stride = (w * 3 + 3) / 4 * 4;
  const uint32_t size = 54 + static_cast<uint32_t>(stride * h);
  std::vector<uint8_t> b(size, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  b[26] = 1;
  b[28] = 24;
  put32(34, static_cast<uint32_t>(stride * h));
  for (int y = 0; y < h; ++y) {
    uint8_t* row = b.data() + 54 + static_cast<size_t>(h - 1 - y) * stride;
    for (int x = 0; x < w; ++x) {
      const uint8_t* px = rgb.data() + (static_cast<size_t>(y) * w + x) * 3;
      row[x * 3 + 0] = px[2];
      row[x * 3 + 1] = px[1];
      row[x * 3 + 2] = px[0];
    }
  }
  return b;
}

// The golden's image: the committed file, or its exact integer nearest-neighbour enlargement
// (out[y][x] = src[y h / H][x w / W] of the decoded file), handed over as lossless BMP bytes.
Image case_image(const nlohmann::json& img) {
  const std::string path = vision_dir() + "/" + img["file"].get<std::string>();
  if (!img.contains("derived_size_wh") || img["derived_size_wh"].is_null())
    return Image::from_file(path);
  auto src = vision::decode_image_file(path);
  EXPECT_TRUE(src.ok()) << src.status().to_string();
  if (!src.ok()) return {};
  const int w = img["derived_size_wh"][0].get<int>(), h = img["derived_size_wh"][1].get<int>();
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    const int sy = static_cast<int>(static_cast<int64_t>(y) * src->height / h);
    for (int x = 0; x < w; ++x) {
      const int sx = static_cast<int>(static_cast<int64_t>(x) * src->width / w);
      std::memcpy(&rgb[(static_cast<size_t>(y) * w + x) * 3],
                  &src->pixels[(static_cast<size_t>(sy) * src->width + sx) * 3], 3);
    }
  }
  return Image::from_bytes(bmp(rgb, w, h));
}

std::vector<Image> case_images(const nlohmann::json& c) {
  std::vector<Image> out;
  for (const auto& img : c["images"]) out.push_back(case_image(img));
  return out;
}

GenerationConfig greedy(int n) {
  GenerationConfig c;
  c.temperature = 0.0f;
  c.max_tokens = n;
  c.ignore_eos = true;
  return c;
}

class Lfm2VlGolden : public ::testing::TestWithParam<std::string> {};

// Same ids as transformers' processor (markers, tile grid, thumbnail, <image> runs).
TEST_P(Lfm2VlGolden, PromptIdsMatchTheProcessor) {
  const nlohmann::json& c = goldens()["cases"][GetParam()];
  const std::vector<Image> images = case_images(c);
  auto g = model().generate(c["prompt_text"].get<std::string>(), images, [] {
    GenerationConfig gc = greedy(1);
    gc.parse_special = true;
    gc.add_special = false;
    return gc;
  }());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->prompt_tokens, c["input_ids"].get<std::vector<int32_t>>());
}

// Logits of the rows the golden keeps (around each image's end and the last 8 positions) within
// 1e-3 of the largest |logit|, and the same argmax.
TEST_P(Lfm2VlGolden, LogitsMatchTransformers) {
  const nlohmann::json& c = goldens()["cases"][GetParam()];
  const std::vector<Image> images = case_images(c);
  auto logits = model().logits(c["prompt_text"].get<std::string>(), images, 0);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  auto golden =
      models::read_npy(data_dir() + "/tiny-lfm2vl/" + c["files"]["logits"].get<std::string>());
  ASSERT_TRUE(golden.ok()) << golden.status().to_string();
  const auto rows = c["logits_rows"].get<std::vector<int64_t>>();
  const auto n_vocab = static_cast<size_t>(golden->shape[1]);
  ASSERT_EQ(golden->shape[0], static_cast<int64_t>(rows.size()));
  ASSERT_EQ(logits->size(), c["n_tokens"].get<size_t>() * n_vocab);
  const double tol = 1e-3 * c["max_abs_logit"].get<double>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const float* ours = logits->data() + static_cast<size_t>(rows[i]) * n_vocab;
    const float* want = golden->data.data() + i * n_vocab;
    double diff = 0.0;
    for (size_t v = 0; v < n_vocab; ++v) diff = std::max(diff, std::abs(double(ours[v]) - want[v]));
    EXPECT_LT(diff, tol) << "row " << rows[i];
    EXPECT_EQ(std::max_element(ours, ours + n_vocab) - ours,
              std::max_element(want, want + n_vocab) - want)
        << "row " << rows[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Lfm2VlGolden,
                         ::testing::Values("small", "resized", "tiled", "wide", "three"));

ChatMessage user_with_image(const Image& image, const std::string& text) {
  ChatMessage m{"user", ""};
  m.parts.push_back(ContentPart::image_part(image));
  m.parts.push_back(ContentPart::text_part(text));
  return m;
}

// chat() renders the list form through the model's template: the same ids as the processor.
TEST(Lfm2Vl, ChatPartsGiveTheProcessorsIds) {
  const nlohmann::json& c = goldens()["cases"]["small"];
  const std::vector<Image> images = case_images(c);
  std::vector<ChatMessage> msgs = {
      user_with_image(images[0], "Describe this picture of a cat in a few words, please.")};
  auto g = model().chat(msgs, greedy(2));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->prompt_tokens, c["input_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(model().info().image_marker, "<image>");
  EXPECT_EQ(model().info().mmproj_path, mmproj_path());
}

// A chat template that renders only string content (e.g. a built-in ChatML one): the images go
// where their parts were, as the model's marker text; the ids equal the processor's.
TEST(Lfm2Vl, StringOnlyTemplatesGetTheMarkerInPlace) {
  auto src = gguf::GgufFile::open(text_path());
  ASSERT_TRUE(src.ok());
  models::test::Rewrite r;
  r.kv = [](const std::string& key, gguf::Value& v) {
    if (key == "tokenizer.chat_template") {
      v = gguf::Value::of_string(
          "{{bos_token}}{% for message in messages %}{{'<|im_start|>' + message['role'] + "
          "'\\n'}}{{ message['content'] }}{{'<|im_end|>\\n'}}{% endfor %}{% if "
          "add_generation_prompt %}{{'<|im_start|>assistant\\n'}}{% endif %}");
    }
    return true;
  };
  const models::test::OwnedGguf g = models::test::rewrite(*src, r);
  const std::string path = ::testing::TempDir() + "/tiny-lfm2vl-string-template.gguf";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(g.bytes.data()),
              static_cast<std::streamsize>(g.bytes.size()));
  }
  auto m = ModelBuilder(path).with_mmproj(mmproj_path()).with_device(Device::cpu()).build();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const nlohmann::json& c = goldens()["cases"]["small"];
  const std::vector<Image> images = case_images(c);
  std::vector<ChatMessage> msgs = {
      user_with_image(images[0], "Describe this picture of a cat in a few words, please.")};
  auto out = m->chat(msgs, greedy(1));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(out->prompt_tokens, c["input_ids"].get<std::vector<int32_t>>());
  std::remove(path.c_str());
}

// The prefix cache: a follow-up with the same image reuses the image's KV and conv state (from
// the whole cached sequence, or from a block snapshot); the same text with another image reuses
// nothing past the tokens before the image (its image keys differ), and every answer equals a
// fresh model's.
TEST(Lfm2Vl, PrefixCacheTellsImagesApart) {
  const std::vector<Image> cat = {Image::from_file(vision_dir() + "/chelsea.png")};
  const std::vector<Image> coffee = {Image::from_file(vision_dir() + "/coffee.png")};
  model().reset();
  auto first = model().generate("<image>What is this?", cat, greedy(0));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto follow = model().generate("<image>What is this? And the colour?", cat, greedy(4));
  ASSERT_TRUE(follow.ok()) << follow.status().to_string();
  EXPECT_GT(follow->timings.cached_tokens, 100);
  model().reset();
  auto fresh = model().generate("<image>What is this? And the colour?", cat, greedy(4));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->timings.cached_tokens, 0);
  EXPECT_EQ(fresh->tokens, follow->tokens);
  // The cat's blocks are cached now; the coffee prompt has the same text but other image keys.
  auto other = model().generate("<image>What is this? And the colour?", coffee, greedy(4));
  ASSERT_TRUE(other.ok());
  EXPECT_LT(other->timings.cached_tokens, 8);  // at most the tokens before the first image key
  model().reset();
  auto other_fresh = model().generate("<image>What is this? And the colour?", coffee, greedy(4));
  ASSERT_TRUE(other_fresh.ok());
  EXPECT_EQ(other->tokens, other_fresh->tokens);
}

// An image is encoded only when a prefill reaches it: a later turn whose cached prefix holds the
// whole image does not encode it again (and answers as a fresh model does); a state file's
// image positions need no encoding either.
TEST(Lfm2Vl, CachedImagesAreNotEncodedAgain) {
  const std::vector<Image> cat = {Image::from_file(vision_dir() + "/chelsea.png")};
  const std::string prompt =
      "<image> Describe the animal in the picture, its fur, its eyes, the light and the "
      "background, and say what it might be doing, in plain words, one sentence for each part.";
  const std::string longer = prompt + " Then the colours.";
  model().reset();
  const int64_t before = model().image_stats().images;
  auto first = model().generate(prompt, cat, greedy(0));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(model().image_stats().images, before + 1);
  const std::string path = ::testing::TempDir() + "/lfm2vl_lazy_state.bin";
  ASSERT_TRUE(model().save_state(path).ok());
  auto follow = model().generate(longer, cat, greedy(4));
  ASSERT_TRUE(follow.ok()) << follow.status().to_string();
  EXPECT_GT(follow->timings.cached_tokens, first->timings.prompt_tokens - 40);
  EXPECT_EQ(model().image_stats().images, before + 1) << "the cached image was encoded again";
  auto loaded = build_vl();
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(loaded->load_state(path).ok());
  auto again = loaded->generate(longer, cat, greedy(4));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_GT(again->timings.cached_tokens, first->timings.prompt_tokens - 40);
  EXPECT_EQ(loaded->image_stats().images, 0) << "the state file's image was encoded again";
  EXPECT_EQ(again->tokens, follow->tokens);
  model().reset();
  auto fresh = model().generate(longer, cat, greedy(4));
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->timings.cached_tokens, 0);
  EXPECT_EQ(model().image_stats().images, before + 2);
  EXPECT_EQ(fresh->tokens, follow->tokens);
  std::remove(path.c_str());
}

// A conversation with an image survives a state file: a fresh model that loads it reuses the
// image's positions (their keys are saved) for a follow-up with the same image, with the same
// tokens as a model that never saved.
TEST(Lfm2Vl, StateFilesKeepImageContext) {
  const std::vector<Image> cat = {Image::from_file(vision_dir() + "/chelsea.png")};
  model().reset();
  ASSERT_TRUE(model().generate("<image>What is this?", cat, greedy(0)).ok());
  const std::string path = ::testing::TempDir() + "/lfm2vl_state.bin";
  ASSERT_TRUE(model().save_state(path).ok());
  auto fresh = build_vl();
  ASSERT_TRUE(fresh.ok());
  Status loaded = fresh->load_state(path);
  ASSERT_TRUE(loaded.ok()) << loaded.to_string();
  auto follow = fresh->generate("<image>What is this? And the colour?", cat, greedy(4));
  ASSERT_TRUE(follow.ok()) << follow.status().to_string();
  EXPECT_GT(follow->timings.cached_tokens, 100);
  model().reset();
  auto direct = model().generate("<image>What is this? And the colour?", cat, greedy(4));
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(follow->tokens, direct->tokens);
  std::remove(path.c_str());
}

TEST(Lfm2Vl, ImagesWithoutMarkersGoBeforeTheText) {
  const std::vector<Image> cat = {Image::from_file(vision_dir() + "/chelsea.png")};
  auto with_marker = model().logits("<image>Hi", cat, 0);
  auto without = model().logits("Hi", cat, 0);
  ASSERT_TRUE(with_marker.ok() && without.ok());
  EXPECT_EQ(*with_marker, *without);
}

TEST(Lfm2Vl, BadImagesAreClearErrorsAndTheModelStaysUsable) {
  const std::vector<uint8_t> png = read_file(vision_dir() + "/chelsea.png");
  ASSERT_GT(png.size(), 1000u);
  struct Case {
    const char* name;
    std::vector<Image> images;
    std::string prompt;
    StatusCode code;
    const char* says;
  };
  std::vector<uint8_t> truncated(png.begin(), png.begin() + static_cast<long>(png.size() / 2));
  std::vector<uint8_t> garbage(4096, 0x5a);
  std::vector<Case> cases = {
      {"truncated", {Image::from_bytes(truncated)}, "<image>x", StatusCode::kInvalidArgument, ""},
      {"garbage", {Image::from_bytes(garbage)}, "<image>x", StatusCode::kInvalidArgument, ""},
      {"empty", {Image{}}, "<image>x", StatusCode::kInvalidArgument, "neither"},
      {"missing file",
       {Image::from_file(vision_dir() + "/no-such.png")},
       "<image>x",
       StatusCode::kInvalidArgument,
       "no-such.png"},
      {"marker count",
       {Image::from_bytes(png)},
       "<image><image>x",
       StatusCode::kInvalidArgument,
       "2 <image> marker(s) for 1 image(s)"},
  };
  for (const auto& c : cases) {
    auto g = model().generate(c.prompt, c.images, greedy(2));
    ASSERT_FALSE(g.ok()) << c.name;
    EXPECT_NE(g.status().message().find(c.says), std::string::npos)
        << c.name << ": " << g.status().to_string();
    if (std::string(c.name) != "missing file") {
      EXPECT_EQ(g.status().code(), c.code) << c.name;
    }
  }
  auto ok = model().generate("<image>x", std::vector<Image>{Image::from_bytes(png)}, greedy(2));
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(Lfm2Vl, MoreImageTokensThanTheContextIsOutOfRange) {
  auto m = ModelBuilder(text_path())
               .with_mmproj(mmproj_path())
               .with_device(Device::cpu())
               .with_context_size(128)
               .build();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  // coffee.png (600x400) takes 228 image tokens.
  auto g = m->generate(
      "<image>x", std::vector<Image>{Image::from_file(vision_dir() + "/coffee.png")}, greedy(2));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(g.status().message().find("image tokens"), std::string::npos) << g.status().message();
  auto text = m->generate("hello", greedy(2));
  EXPECT_TRUE(text.ok()) << text.status().to_string();
}

TEST(Lfm2Vl, TextModelsRefuseImagesAndMismatchedMmprojFailsTheBuild) {
  auto text_only = ModelBuilder(text_path()).with_device(Device::cpu()).build();
  ASSERT_TRUE(text_only.ok());
  auto g = text_only->generate(
      "<image>x", std::vector<Image>{Image::from_file(vision_dir() + "/chelsea.png")}, greedy(1));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("takes no images"), std::string::npos);
  // A gemma3 text model of the same width: the projector is LFM2-VL's.
  auto gemma = ModelBuilder(data_dir() + "/tiny-gemma3-f32.gguf")
                   .with_mmproj(mmproj_path())
                   .with_device(Device::cpu())
                   .build();
  ASSERT_FALSE(gemma.ok());
  EXPECT_NE(gemma.status().message().find("expected lfm2"), std::string::npos)
      << gemma.status().message();
  // An LFM2 text model without the image tokens in its vocabulary.
  auto lfm2 = ModelBuilder(data_dir() + "/tiny-lfm2-f32.gguf")
                  .with_mmproj(mmproj_path())
                  .with_device(Device::cpu())
                  .build();
  ASSERT_FALSE(lfm2.ok());
  EXPECT_NE(lfm2.status().message().find("image tokens"), std::string::npos)
      << lfm2.status().message();
  // A text model given as the mmproj.
  auto swapped =
      ModelBuilder(text_path()).with_mmproj(text_path()).with_device(Device::cpu()).build();
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("expected \"clip\""), std::string::npos)
      << swapped.status().message();
}

// An mmproj made for another embedding width, and a truncated mmproj: the build fails naming
// the file and the problem.
TEST(Lfm2Vl, MmprojOfAnotherWidthOrTruncatedFailsTheBuild) {
  auto src = gguf::GgufFile::open(mmproj_path());
  ASSERT_TRUE(src.ok());
  models::test::Rewrite r;
  r.kv = [](const std::string& key, gguf::Value& v) {
    if (key == "clip.vision.projection_dim") v = gguf::Value::of_uint(gguf::ValueType::kUint32, 32);
    return true;
  };
  r.keep_tensor = [](const gguf::TensorInfo& t) { return t.name.rfind("mm.2.", 0) != 0; };
  r.extra_f32 = {{"mm.2.weight", {48, 32}}, {"mm.2.bias", {32}}};
  const models::test::OwnedGguf narrow = models::test::rewrite(*src, r);
  const std::string dir = ::testing::TempDir();
  auto write = [](const std::string& path, const uint8_t* data, size_t n) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
  };
  write(dir + "/mmproj-narrow.gguf", narrow.bytes.data(), narrow.bytes.size());
  auto m = ModelBuilder(text_path())
               .with_mmproj(dir + "/mmproj-narrow.gguf")
               .with_device(Device::cpu())
               .build();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("32-wide embeddings, the model's are 64"), std::string::npos)
      << m.status().message();
  const std::vector<uint8_t> whole = read_file(mmproj_path());
  write(dir + "/mmproj-cut.gguf", whole.data(), whole.size() / 2);
  auto cut = ModelBuilder(text_path())
                 .with_mmproj(dir + "/mmproj-cut.gguf")
                 .with_device(Device::cpu())
                 .build();
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("mmproj-cut.gguf"), std::string::npos)
      << cut.status().message();
  std::remove((dir + "/mmproj-narrow.gguf").c_str());
  std::remove((dir + "/mmproj-cut.gguf").c_str());
}

}  // namespace
}  // namespace geniex
