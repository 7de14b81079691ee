// Built-in fallback templates render each family's known prompt format.
#include <gtest/gtest.h>

#include "tokenizer/jinja/chat_template.h"

namespace geniex::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string render_family(const char* family, const json& messages, bool gen, const char* bos = "",
                          const char* eos = "") {
  auto tmpl = builtin_chat_template(family);
  EXPECT_TRUE(tmpl.has_value()) << family;
  if (!tmpl) return {};
  ChatTemplateInputs in;
  in.messages = messages;
  in.add_generation_prompt = gen;
  in.bos_token = bos;
  in.eos_token = eos;
  auto r = render_chat_template(*tmpl, in);
  EXPECT_TRUE(r.ok()) << family << ": " << r.status().to_string();
  return r.ok() ? *r : std::string();
}

const json kChat = json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello!"},
  {"role": "user", "content": "Bye"}])");

TEST(BuiltinTemplates, Gemma) {
  EXPECT_EQ(render_family("gemma3", kChat, true, "<bos>"),
            "<bos><start_of_turn>user\nBe "
            "brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
}

TEST(BuiltinTemplates, Llama3) {
  EXPECT_EQ(render_family("llama3", kChat, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(BuiltinTemplates, Mistral) {
  EXPECT_EQ(render_family("mistral", kChat, true, "<s>", "</s>"),
            "<s>[INST] Hi[/INST] Hello!</s>[INST] Be brief.\n\nBye[/INST]");
}

TEST(BuiltinTemplates, ChatmlForQwen) {
  const char* want =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>"
      "assistant\n";
  EXPECT_EQ(render_family("qwen2", kChat, true), want);
  EXPECT_EQ(render_family("qwen3", kChat, true), want);
}

TEST(BuiltinTemplates, Lfm2) {
  json m = json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}])");
  EXPECT_EQ(render_family("lfm2", m, false, "<|startoftext|>"),
            "<|startoftext|><|im_start|>user\nHi<|im_end|>\n");
}

TEST(BuiltinTemplates, UnknownFamily) { EXPECT_FALSE(builtin_chat_template("gpt-9").has_value()); }

}  // namespace
}  // namespace geniex::jinja
