// POST /v1/embeddings request parsing and reply serialization (embeddings_request.h).
#include "server/embeddings_request.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace geniex::server {
namespace {

EmbeddingsRequest ok(const std::string& body) {
  auto r = parse_embeddings_request(body);
  EXPECT_TRUE(std::holds_alternative<EmbeddingsRequest>(r))
      << (std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r).body() : "");
  return std::holds_alternative<EmbeddingsRequest>(r) ? std::get<EmbeddingsRequest>(r)
                                                      : EmbeddingsRequest{};
}

ApiError bad(const std::string& body) {
  auto r = parse_embeddings_request(body);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(EmbeddingsRequest, EveryInputShape) {
  EXPECT_EQ(ok(R"({"input": "hi"})").texts, std::vector<std::string>{"hi"});
  EXPECT_EQ(ok(R"({"input": ["a", "b"], "model": "m"})").texts,
            (std::vector<std::string>{"a", "b"}));
  auto t = ok(R"({"input": [1, 2, 3]})");
  ASSERT_EQ(t.token_inputs.size(), 1u);
  EXPECT_EQ(t.token_inputs[0], (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(ok(R"({"input": [[1], [2, 3]]})").token_inputs.size(), 2u);
  auto f = ok(R"({"input": "x", "encoding_format": "base64", "dimensions": 8, "user": "u"})");
  EXPECT_TRUE(f.base64);
  EXPECT_EQ(f.dimensions, 8);
  EXPECT_FALSE(ok(R"({"input": "x", "encoding_format": "float"})").base64);
}

TEST(EmbeddingsRequest, BadInputsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* code;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"input": []})", "input", "invalid_value"},
           {R"({"input": ""})", "input", "invalid_value"},
           {R"({"input": 3})", "input", "invalid_type"},
           {R"({"input": null})", "input", "missing_required_parameter"},
           {R"({"input": [true]})", "input[0]", "invalid_type"},
           {R"({"input": ["a", ""]})", "input[1]", "invalid_value"},
           {R"({"input": [1, "a"]})", "input[1]", "invalid_type"},
           {R"({"input": [[1], 2]})", "input[1]", "invalid_type"},
           {R"({"input": [[1, 2.5]]})", "input[0][1]", "invalid_type"},
           {R"({"input": [[4294967296]]})", "input[0][0]", "invalid_type"},
           {R"({"input": "a", "encoding_format": 1})", "encoding_format", "invalid_type"},
           {R"({"input": "a", "encoding_format": "int8"})", "encoding_format", "invalid_value"},
           {R"({"input": "a", "dimensions": -1})", "dimensions", "invalid_value"},
           {R"({"input": "a", "dimensions": "8"})", "dimensions", "invalid_type"},
           {R"({"input": "a", "model": 7})", "model", "invalid_type"},
       }) {
    const ApiError e = bad(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param.value_or(""), c.param) << c.body;
    EXPECT_EQ(e.code.value_or(""), c.code) << c.body;
  }
  EXPECT_EQ(bad("[1]").status, 400);
  EXPECT_EQ(bad("{nope").status, 400);
  std::string many = R"({"input": [)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) many += i ? ",\"a\"" : "\"a\"";
  EXPECT_EQ(bad(many + "]}").param.value_or(""), "input");
}

TEST(EmbeddingsRequest, Base64IsLittleEndianFloat32) {
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");  // 00 00 80 3f
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(base64_floats({0.0f, 0.0f, 0.0f}), "AAAAAAAAAAAAAAAA");
  EXPECT_EQ(base64_floats({}), "");
}

TEST(EmbeddingsRequest, ResponseShape) {
  Embeddings e;
  e.vectors = {{1.0f, 0.0f}, {0.0f, 1.0f}};
  e.prompt_tokens = 7;
  const Json j = embeddings_response(e, "m", false);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "m");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["embedding"][1], 1.0);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(embeddings_response(e, "m", true)["data"][0]["embedding"], "AACAPwAAAAA=");
}

}  // namespace
}  // namespace geniex::server
