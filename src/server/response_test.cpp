// Response and SSE serialization in OpenAI's shapes.
#include "server/response.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace geniex::server {
namespace {

const ResponseMeta kMeta{"chatcmpl-1", 1700000000, "gemma"};

// Built step by step: nested braced lists of strings trip GCC 12's -Wmaybe-uninitialized.
LogprobEntry entry(const std::string& text, float lp) {
  LogprobEntry e;
  e.chosen.text = text;
  e.chosen.logprob = lp;
  return e;
}
TokenText alt(const std::string& text, float lp) {
  TokenText t;
  t.text = text;
  t.logprob = lp;
  return t;
}

TEST(Response, ChatCompletionShape) {
  const Json j = chat_completion_json(kMeta, "Hello", "stop", {5, 2}, std::nullopt);
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "gemma");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
}

TEST(Response, FinishReasons) {
  EXPECT_EQ(finish_reason(StopReason::kEndOfGeneration), "stop");
  EXPECT_EQ(finish_reason(StopReason::kStopString), "stop");
  EXPECT_EQ(finish_reason(StopReason::kMaxTokens), "length");
  EXPECT_EQ(finish_reason(StopReason::kContextFull), "length");
}

TEST(Response, ChatLogprobsWithBytesAndNoInfinity) {
  std::vector<LogprobEntry> e;
  e.push_back(entry(" hi", -0.5f));
  e[0].top.push_back(alt(" hi", -0.5f));
  e[0].top.push_back(alt(" yo", -1.25f));
  e.push_back(entry("\xE2\x82", -std::numeric_limits<float>::infinity()));
  const Json j = chat_logprobs_json(e);
  ASSERT_EQ(j["content"].size(), 2u);
  EXPECT_EQ(j["content"][0]["token"], " hi");
  EXPECT_FLOAT_EQ(j["content"][0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(j["content"][0]["bytes"], Json::array({32, 104, 105}));
  EXPECT_EQ(j["content"][0]["top_logprobs"][1]["token"], " yo");
  EXPECT_EQ(j["content"][1]["logprob"], -9999.0);
  EXPECT_EQ(j["content"][1]["bytes"], Json::array({0xE2, 0x82}));
  // A partial UTF-8 sequence still dumps (as U+FFFD) instead of throwing.
  const std::string text = dump(j);
  EXPECT_NE(text.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(Response, CompletionLogprobsOffsets) {
  std::vector<LogprobEntry> e;
  e.push_back(entry("ab", -1.0f));
  e[0].top.push_back(alt("ab", -1.0f));
  e.push_back(entry("c", -2.0f));
  const Json j = completion_logprobs_json(e, 10);
  EXPECT_EQ(j["tokens"], Json::array({"ab", "c"}));
  EXPECT_EQ(j["text_offset"], Json::array({10, 12}));
  EXPECT_EQ(j["top_logprobs"][0]["ab"], -1.0);
}

TEST(Response, StreamChunks) {
  ChunkParts role;
  role.role = true;
  role.content = "";
  Json j = stream_chunk_json(Endpoint::kChat, kMeta, role, true);
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(j.contains("usage") && j["usage"].is_null());
  ChunkParts last;
  last.finish = "length";
  j = stream_chunk_json(Endpoint::kChat, kMeta, last, false);
  EXPECT_TRUE(j["choices"][0]["delta"].is_object() && j["choices"][0]["delta"].empty());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(j.contains("usage"));
  const Json u = usage_chunk_json(Endpoint::kChat, kMeta, {3, 4});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 7);
  ChunkParts text;
  text.content = "xy";
  j = stream_chunk_json(Endpoint::kCompletion, kMeta, text, false);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "xy");
}

TEST(Response, SseFramingAndIds) {
  EXPECT_EQ(sse_event(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  const std::string a = make_id("chatcmpl-"), b = make_id("chatcmpl-");
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
}

TEST(Response, GenerationSettingsRoundFloatsAndReportUnsetSeedAsMinusOne) {
  GenerationConfig c;
  c.max_tokens = -1;
  Json j = generation_settings_json(c);
  EXPECT_EQ(j.dump(), R"({"max_tokens":-1,"temperature":0.8,"top_k":40,"top_p":0.95,"min_p":0.05,)"
                      R"("repeat_penalty":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,)"
                      R"("repeat_last_n":64,"seed":-1,"stop":[],"ignore_eos":false})");
  c.seed = 7;
  c.stop = {"a"};
  j = generation_settings_json(c);
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["stop"], Json::array({"a"}));
}

}  // namespace
}  // namespace geniex::server
