// Template selection: the file's own template wins; otherwise the family's built-in one. On
// the real Gemma 3 270M (whose GGUF has no template) the built-in gemma3 template must render
// exactly what Google's official template (tests/data/chat_templates/gemma3.jinja, rendered
// by jinja2 in goldens.json) renders for the same conversations.
#include "tokenizer/chat_template_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/real_model.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/jinja/chat_template.h"

namespace geniex::tokenizer {
namespace {

gguf::GgufFile parse_owned(const gguf::GgufWriter& w, std::vector<uint8_t>& storage) {
  storage = *w.to_bytes();
  return std::move(gguf::GgufFile::parse(storage, "mem.gguf")).value();
}

TEST(ChatTemplateSource, FileTemplateWins) {
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value::of_string("gemma3"));
  w.set("tokenizer.chat_template", gguf::Value::of_string("{{ messages[0].content }}"));
  std::vector<uint8_t> buf;
  auto f = parse_owned(w, buf);
  auto s = chat_template_source(f);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->origin, ChatTemplateOrigin::kFile);
  EXPECT_EQ(s->text, "{{ messages[0].content }}");
}

TEST(ChatTemplateSource, FallbackByFamilyAndUnknownArchitecture) {
  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value::of_string("llama"));
  w.set("tokenizer.ggml.model", gguf::Value::of_string("gpt2"));
  std::vector<uint8_t> buf;
  auto f = parse_owned(w, buf);
  auto s = chat_template_source(f);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->origin, ChatTemplateOrigin::kBuiltin);
  EXPECT_EQ(s->family, "llama3");

  gguf::GgufWriter w2;
  w2.set("general.architecture", gguf::Value::of_string("mamba9"));
  std::vector<uint8_t> buf2;
  auto f2 = parse_owned(w2, buf2);
  auto s2 = chat_template_source(f2);
  ASSERT_FALSE(s2.ok());
  EXPECT_EQ(s2.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s2.status().message().find("mamba9"), std::string::npos);
}

TEST(ChatTemplateSource, GemmaBuiltinMatchesOfficialTemplate) {
  auto file = gguf::GgufFile::open(testing_paths::real_model_path());
  ASSERT_TRUE(file.ok()) << file.status().to_string() << " (run scripts/setup.sh)";
  auto src = chat_template_source(*file);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  EXPECT_EQ(src->origin, ChatTemplateOrigin::kBuiltin);
  EXPECT_EQ(src->family, "gemma3");

  const std::string dir =
      std::string(std::getenv("GENIEX_SOURCE_DIR")) + "/tests/data/chat_templates";
  std::ifstream gin(dir + "/goldens.json");
  std::ifstream cin(dir + "/conversations.json");
  ASSERT_TRUE(gin.good() && cin.good());
  const auto goldens = nlohmann::ordered_json::parse(gin);
  const auto convs = nlohmann::ordered_json::parse(cin);
  auto tmpl = jinja::Template::parse(src->text);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  // Compare on the conversations the official template accepts and that use only plain
  // text turns (the built-in template does not try to cover tools or images).
  int compared = 0;
  for (const auto& conv : convs.at("conversations")) {
    const std::string key = "gemma3/" + conv.at("id").get<std::string>();
    if (!goldens.at("results").contains(key)) continue;
    const auto& g = goldens.at("results").at(key);
    if (!g.contains("output")) continue;  // the official template raised
    if (!conv.at("tools").is_null() || !conv.at("extra").empty()) continue;
    bool plain = true;
    for (const auto& m : conv.at("messages")) {
      if (!m.at("content").is_string() || m.contains("tool_calls") || m.at("role") == "tool") {
        plain = false;
      }
    }
    if (!plain) continue;
    jinja::ChatTemplateInputs in;
    in.messages = conv.at("messages");
    in.add_generation_prompt = conv.at("add_generation_prompt").get<bool>();
    in.bos_token = "<bos>";
    in.eos_token = "<end_of_turn>";
    auto out = jinja::render_chat_template(*tmpl, in);
    ASSERT_TRUE(out.ok()) << key << ": " << out.status().to_string();
    EXPECT_EQ(*out, g.at("output").get<std::string>()) << key;
    ++compared;
  }
  EXPECT_GE(compared, 10);
}

}  // namespace
}  // namespace geniex::tokenizer
