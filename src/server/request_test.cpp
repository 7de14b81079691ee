// Parsing and validation of OpenAI request bodies: what is accepted, the defaults, and the
// 400s (with `param`) for wrong types, bad values and unsupported features.
#include "server/request.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

namespace geniex::server {
namespace {

CompletionRequest chat_ok(const std::string& body) {
  auto r = parse_chat_request(body);
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << " -> " << e->message;
  return std::holds_alternative<CompletionRequest>(r) ? std::get<CompletionRequest>(r)
                                                      : CompletionRequest{};
}

ApiError chat_err(const std::string& body) {
  auto r = parse_chat_request(body);
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << "accepted: " << body;
    return {};
  }
  return std::get<ApiError>(r);
}

ApiError completion_err(const std::string& body) {
  auto r = parse_completion_request(body);
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << "accepted: " << body;
    return {};
  }
  return std::get<ApiError>(r);
}

const std::string kMsgs = R"("model":"m","messages":[{"role":"user","content":"hi"}])";

TEST(ChatRequest, MinimalBodyGetsTheDefaultServerSettings) {
  const auto r = chat_ok("{" + kMsgs + "}");
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "hi");
  // geniex run's (llama.cpp's) sampling, as a server started without sampling flags uses.
  EXPECT_FLOAT_EQ(r.config.temperature, 0.8f);
  EXPECT_FLOAT_EQ(r.config.top_p, 0.95f);
  EXPECT_EQ(r.config.top_k, 40);
  EXPECT_FLOAT_EQ(r.config.min_p, 0.05f);
  EXPECT_FALSE(r.config.seed.has_value());
  EXPECT_EQ(r.config.max_tokens, -1);  // fill the context
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_FALSE(r.json_object);
}

TEST(ChatRequest, EveryFieldMapsToTheConfig) {
  const auto r = chat_ok("{" + kMsgs +
                         R"(,"temperature":0,"top_p":0.5,"max_tokens":7,"seed":42,
      "stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":-1,"stream":true,
      "stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":3,
      "response_format":{"type":"json_object"},"n":1,"user":"x","unknown_field":{"a":1}})");
  EXPECT_FLOAT_EQ(r.config.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.config.top_p, 0.5f);
  EXPECT_EQ(r.config.max_tokens, 7);
  ASSERT_TRUE(r.config.seed.has_value());
  EXPECT_EQ(*r.config.seed, 42u);
  EXPECT_EQ(r.config.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(r.config.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.config.frequency_penalty, -1.0f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.json_object);
}

TEST(ChatRequest, MaxCompletionTokensWinsAndHugeValuesAreCapped) {
  auto r = chat_ok("{" + kMsgs + R"(,"max_completion_tokens":5,"max_tokens":9})");
  EXPECT_EQ(r.config.max_tokens, 5);
  r = chat_ok("{" + kMsgs + R"(,"max_tokens":9223372036854775807})");
  EXPECT_EQ(r.config.max_tokens, kMaxTokensCap);
}

TEST(ChatRequest, ContentPartsStopStringAndNulls) {
  const auto r = chat_ok(
      R"({"model":"m","messages":[{"role":"developer","content":"sys"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":null}],"stop":"x","temperature":null,"seed":null})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.config.stop, (std::vector<std::string>{"x"}));
  EXPECT_FLOAT_EQ(r.config.temperature, 0.8f);  // null = not given: the default
  EXPECT_FALSE(r.config.seed.has_value());
}

GenerationConfig server_defaults() {
  GenerationConfig d = request_defaults();
  d.max_tokens = 5;
  d.temperature = 0.3f;
  d.top_k = 7;
  d.top_p = 0.5f;
  d.min_p = 0.2f;
  d.repetition_penalty = 1.1f;
  d.presence_penalty = 0.4f;
  d.frequency_penalty = 0.6f;
  d.penalty_last_n = 32;
  d.seed = 99;
  d.stop = {"END"};
  d.ignore_eos = true;
  return d;
}

TEST(ChatRequest, OmittedFieldsTakeTheServerDefaults) {
  const auto r = parse_chat_request("{" + kMsgs + R"(,"temperature":null})", server_defaults());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  const GenerationConfig& c = std::get<CompletionRequest>(r).config;
  EXPECT_EQ(c.max_tokens, 5);
  EXPECT_FLOAT_EQ(c.temperature, 0.3f);
  EXPECT_EQ(c.top_k, 7);
  EXPECT_FLOAT_EQ(c.top_p, 0.5f);
  EXPECT_FLOAT_EQ(c.min_p, 0.2f);
  EXPECT_FLOAT_EQ(c.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(c.presence_penalty, 0.4f);
  EXPECT_FLOAT_EQ(c.frequency_penalty, 0.6f);
  EXPECT_EQ(c.penalty_last_n, 32);
  ASSERT_TRUE(c.seed.has_value());
  EXPECT_EQ(*c.seed, 99u);
  EXPECT_EQ(c.stop, (std::vector<std::string>{"END"}));
  EXPECT_TRUE(c.ignore_eos);
  // The completions endpoint too, max_tokens included (not OpenAI's 16).
  const auto t = parse_completion_request(R"({"prompt":"x"})", server_defaults());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(t));
  EXPECT_EQ(std::get<CompletionRequest>(t).config.max_tokens, 5);
  EXPECT_EQ(std::get<CompletionRequest>(t).config.top_k, 7);
}

TEST(ChatRequest, TheRequestsOwnValuesWin) {
  const auto r = parse_chat_request(
      "{" + kMsgs +
          R"(,"max_tokens":9,"temperature":1.5,"top_k":3,"top_p":0.9,"min_p":0.01,
          "repeat_penalty":1.3,"presence_penalty":0,"frequency_penalty":0,"repeat_last_n":-1,
          "seed":1,"stop":[],"ignore_eos":false})",
      server_defaults());
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  const GenerationConfig& c = std::get<CompletionRequest>(r).config;
  EXPECT_EQ(c.max_tokens, 9);
  EXPECT_FLOAT_EQ(c.temperature, 1.5f);
  EXPECT_EQ(c.top_k, 3);
  EXPECT_FLOAT_EQ(c.top_p, 0.9f);
  EXPECT_FLOAT_EQ(c.min_p, 0.01f);
  EXPECT_FLOAT_EQ(c.repetition_penalty, 1.3f);
  EXPECT_FLOAT_EQ(c.presence_penalty, 0.0f);
  EXPECT_FLOAT_EQ(c.frequency_penalty, 0.0f);
  EXPECT_EQ(c.penalty_last_n, -1);
  EXPECT_EQ(*c.seed, 1u);
  EXPECT_TRUE(c.stop.empty());  // an explicit empty list replaces the server's stops
  EXPECT_FALSE(c.ignore_eos);
}

TEST(ChatRequest, AnyModelNameOrNoneIsAccepted) {
  EXPECT_EQ(chat_ok(R"({"model":"gpt-4o","messages":[{"role":"user","content":"x"}]})").model,
            "gpt-4o");
  EXPECT_EQ(chat_ok(R"({"messages":[{"role":"user","content":"x"}]})").model, "");
  EXPECT_EQ(chat_err(R"({"model":5,"messages":[{"role":"user","content":"x"}]})").param, "model");
}

TEST(ChatRequest, MalformedBodiesAre400WithoutParam) {
  for (const char* body : {"", "{", "{\"model\":", "[1,2]", "\"text\"", "{\"a\":1,}", "nul"}) {
    const ApiError e = chat_err(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_FALSE(e.param.has_value()) << body;
  }
}

TEST(ChatRequest, WrongTypesName400Param) {
  struct Case {
    std::string extra;
    std::string param;
  };
  const Case cases[] = {
      {R"("temperature":"hot")", "temperature"},
      {R"("max_tokens":1.5)", "max_tokens"},
      {R"("max_tokens":true)", "max_tokens"},
      {R"("stream":"yes")", "stream"},
      {R"("stop":5)", "stop"},
      {R"("stop":["a",1])", "stop[1]"},
      {R"("seed":"1")", "seed"},
      {R"("logprobs":1)", "logprobs"},
      {R"("top_p":[1])", "top_p"},
  };
  for (const auto& c : cases) {
    const ApiError e = chat_err("{" + kMsgs + "," + c.extra + "}");
    EXPECT_EQ(e.status, 400) << c.extra;
    EXPECT_EQ(e.param.value_or(""), c.param) << c.extra;
    EXPECT_EQ(e.code.value_or(""), "invalid_type") << c.extra;
  }
}

TEST(ChatRequest, BadValuesName400Param) {
  struct Case {
    std::string body;
    std::string param;
  };
  const Case cases[] = {
      {"{" + kMsgs + R"(,"temperature":2.5})", "temperature"},
      {"{" + kMsgs + R"(,"top_p":-0.1})", "top_p"},
      {"{" + kMsgs + R"(,"max_tokens":0})", "max_tokens"},
      {"{" + kMsgs + R"(,"presence_penalty":3})", "presence_penalty"},
      {"{" + kMsgs + R"(,"top_logprobs":21,"logprobs":true})", "top_logprobs"},
      {"{" + kMsgs + R"(,"top_logprobs":2})", "top_logprobs"},
      {"{" + kMsgs + R"(,"stop":["a","b","c","d","e"]})", "stop"},
      {"{" + kMsgs + R"(,"stream_options":{"include_usage":true}})", "stream_options"},
      {"{" + kMsgs + R"(,"response_format":{"type":"yaml"}})", "response_format.type"},
      {R"({"model":"m","messages":[]})", "messages"},
      {R"({"model":"m","messages":[{"role":"function","content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"model":"m","messages":[{"role":"user"}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]})",
       "messages[0].content[0].type"},
      {R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"model":"m"})", "messages"},
  };
  for (const auto& c : cases) {
    const ApiError e = chat_err(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param.value_or(""), c.param) << c.body;
  }
}

TEST(ChatRequest, UnsupportedFeaturesAreClear400s) {
  for (const auto& [extra, param] : std::vector<std::pair<std::string, std::string>>{
           {R"("n":2)", "n"}, {R"("logit_bias":{"1":5})", "logit_bias"}}) {
    const ApiError e = chat_err("{" + kMsgs + "," + extra + "}");
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param.value_or(""), param);
    EXPECT_EQ(e.code.value_or(""), "unsupported_parameter") << extra;
  }
  // Empty tools / logit_bias and n = 1 are fine.
  chat_ok("{" + kMsgs + R"(,"tools":[],"logit_bias":{},"n":1})");
}

TEST(ChatRequest, JsonSchemaResponseFormats) {
  const std::string ok_schema =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  auto r = chat_ok(
      "{" + kMsgs +
      R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":)" +
      ok_schema + "}}}");
  EXPECT_EQ(nlohmann::json::parse(r.config.json_schema), nlohmann::json::parse(ok_schema));
  EXPECT_FALSE(r.json_object);
  for (
      const auto& [rf, param, code] :
      std::vector<std::tuple<std::string, std::string, std::string>>{
          {R"({"type":"json_schema"})", "response_format.json_schema",
           "missing_required_parameter"},
          {R"({"type":"json_schema","json_schema":{"schema":{}}})",
           "response_format.json_schema.name", "missing_required_parameter"},
          {R"({"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"a+"}}})",
           "response_format.json_schema.schema", "invalid_value"},
          {R"({"type":"json_schema","json_schema":"x"})", "response_format.json_schema",
           "invalid_type"},
          {R"({"type":"yaml"})", "response_format.type", "invalid_value"}}) {
    const ApiError e = chat_err("{" + kMsgs + R"(,"response_format":)" + rf + "}");
    EXPECT_EQ(e.status, 400) << rf;
    EXPECT_EQ(e.param.value_or(""), param) << rf;
    EXPECT_EQ(e.code.value_or(""), code) << rf;
  }
  const ApiError e = chat_err(
      "{" + kMsgs +
      R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"a+"}}}})");
  EXPECT_NE(e.message.find("'pattern'"), std::string::npos) << e.message;
}

// ---- images (image_url content parts) ----

std::string image_body(const std::string& parts) {
  return R"({"model":"m","messages":[{"role":"user","content":[)" + parts + "]}]}";
}

std::string image_part(const std::string& url) {
  return R"({"type":"image_url","image_url":{"url":")" + url + R"(","detail":"auto"}})";
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

TEST(Base64, DecodesStrictly) {
  EXPECT_EQ(decode_base64("aGVsbG8="), bytes_of("hello"));
  EXPECT_EQ(decode_base64("aGVsbG8h"), bytes_of("hello!"));
  EXPECT_EQ(decode_base64("aGk="), bytes_of("hi"));
  EXPECT_EQ(decode_base64("aA=="), bytes_of("h"));
  EXPECT_EQ(decode_base64("+/+/"), (std::vector<uint8_t>{0xfb, 0xff, 0xbf}));
  EXPECT_EQ(decode_base64(""), std::vector<uint8_t>{});
  size_t bad = 99;
  EXPECT_FALSE(decode_base64("aGVs bG8=", &bad));  // whitespace
  EXPECT_EQ(bad, 4u);
  EXPECT_FALSE(decode_base64("aGVsbG8", &bad));  // missing padding
  EXPECT_EQ(bad, 7u);
  EXPECT_FALSE(decode_base64("aG=sbG8=", &bad));  // padding inside
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(decode_base64("a===", &bad));
  EXPECT_FALSE(decode_base64("aGVsbG8-", &bad));  // URL-safe alphabet is not base64
  EXPECT_EQ(bad, 7u);
  EXPECT_FALSE(decode_base64("aB==", &bad));  // non-zero pad bits
  EXPECT_FALSE(decode_base64("aGVsbG8=====", &bad));
}

TEST(ChatImages, DataUrlDecodesIntoAnImagePart) {
  const auto r = chat_ok(image_body(image_part("data:image/png;base64,aGVsbG8=")));
  EXPECT_EQ(r.n_images, 1);
  ASSERT_EQ(r.messages.size(), 1u);
  ASSERT_EQ(r.messages[0].parts.size(), 1u);
  EXPECT_EQ(r.messages[0].parts[0].type, ContentPart::Type::kImage);
  EXPECT_EQ(r.messages[0].parts[0].image.bytes, bytes_of("hello"));
  EXPECT_TRUE(r.messages[0].parts[0].image.path.empty());
  // Media types are case-insensitive; jpeg, gif, webp and bmp are accepted too.
  for (const char* t : {"image/JPEG", "image/jpg", "image/gif", "image/webp", "image/bmp"}) {
    EXPECT_EQ(chat_ok(image_body(image_part(std::string("data:") + t + ";base64,aGk="))).n_images,
              1)
        << t;
  }
}

TEST(ChatImages, PartsKeepTheirOrderAndTheStringForm) {
  const auto r = chat_ok(image_body(
      R"({"type":"text","text":"first"},{"type":"image_url","image_url":"data:image/jpeg;base64,aGk="},)"
      R"({"type":"text","text":"between"},)" +
      image_part("data:image/png;base64,aA==") + R"(,{"type":"text","text":"last"})"));
  EXPECT_EQ(r.n_images, 2);
  const auto& p = r.messages[0].parts;
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].type, ContentPart::Type::kText);
  EXPECT_EQ(p[0].text, "first");
  EXPECT_EQ(p[1].type, ContentPart::Type::kImage);
  EXPECT_EQ(p[1].image.bytes, bytes_of("hi"));
  EXPECT_EQ(p[2].text, "between");
  EXPECT_EQ(p[3].image.bytes, bytes_of("h"));
  EXPECT_EQ(p[4].text, "last");
  EXPECT_EQ(r.messages[0].content, "first\nbetween\nlast");
  // Text-only arrays stay joined text (no parts), as before images existed.
  const auto t = chat_ok(image_body(R"({"type":"text","text":"a"},{"type":"text","text":"b"})"));
  EXPECT_TRUE(t.messages[0].parts.empty());
  EXPECT_EQ(t.messages[0].content, "a\nb");
  EXPECT_EQ(t.n_images, 0);
}

TEST(ChatImages, BadImagesAre400sNamingThePart) {
  struct Case {
    std::string part;
    std::string needle;
  };
  const Case cases[] = {
      {image_part("data:image/png;base64,aGVs!bG8="), "invalid base64"},
      {image_part("data:image/png;base64,aGVsbG8"), "invalid base64"},
      {image_part("data:image/png;base64,"), "no data"},
      {image_part("data:image/png,aGVsbG8="), "base64"},
      {image_part("data:text/plain;base64,aGVsbG8="), "unsupported image type"},
      {image_part("data:image/png;base64"), "','"},
      {image_part("http://example.com/cat.png"), "remote images are not fetched"},
      {image_part("HTTPS://example.com/cat.png"), "remote images are not fetched"},
      {image_part("ftp://example.com/cat.png"), "expected a data: URL"},
      {image_part("file:///etc/passwd"), "--allow-image-dir"},
      {R"({"type":"image_url","image_url":{"url":5}})", "a string"},
      {R"({"type":"image_url","image_url":5})", "or a string"},
  };
  for (const auto& c : cases) {
    const ApiError e = chat_err(image_body(R"({"type":"text","text":"x"},)" + c.part));
    EXPECT_EQ(e.status, 400) << c.part;
    EXPECT_TRUE(e.param.value_or("").starts_with("messages[0].content[1]"))
        << c.part << " -> " << e.param.value_or("");
    EXPECT_NE(e.message.find(c.needle), std::string::npos) << c.part << " -> " << e.message;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(ChatImages, AtMostEightImagesPerRequest) {
  std::string parts;
  for (int i = 0; i < kMaxImagesPerRequest; ++i) {
    parts += (i ? "," : "") + image_part("data:image/png;base64,aGk=");
  }
  EXPECT_EQ(chat_ok(image_body(parts)).n_images, kMaxImagesPerRequest);
  const ApiError e = chat_err(image_body(parts + "," + image_part("data:image/png;base64,aGk=")));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param.value_or(""), "messages[0].content[8]");
  EXPECT_NE(e.message.find("at most 8 images"), std::string::npos);
}

/// A temporary tree: allowed/ (with an image and a symlink out), secret/ beside it.
class FileUrls : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/geniex_req_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    namespace fs = std::filesystem;
    fs::create_directories(root_ / "allowed" / "sub");
    fs::create_directories(root_ / "secret");
    std::ofstream(root_ / "allowed" / "sub" / "cat.png") << "png";
    std::ofstream(root_ / "secret" / "key.png") << "key";
    fs::create_symlink(root_ / "secret" / "key.png", root_ / "allowed" / "link.png");
    fs::create_directory_symlink(root_ / "secret", root_ / "allowed" / "dirlink");
    opts_.allowed_dirs = {fs::canonical(root_ / "allowed").string()};
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  ApiResult<CompletionRequest> parse(const std::string& url) {
    return parse_chat_request(image_body(image_part(url)), request_defaults(), opts_);
  }
  std::string url(const std::string& rel) { return "file://" + (root_ / rel).string(); }

  std::filesystem::path root_;
  ImageOptions opts_;
};

TEST_F(FileUrls, FileUnderAnAllowedDirectoryIsAccepted) {
  auto r = parse(url("allowed/sub/cat.png"));
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r)) << std::get<ApiError>(r).message;
  const auto& part = std::get<CompletionRequest>(r).messages[0].parts[0];
  EXPECT_EQ(part.image.path, std::filesystem::canonical(root_ / "allowed/sub/cat.png").string());
  EXPECT_TRUE(part.image.bytes.empty());
  // ".." that stays inside, and file://localhost/, are fine.
  EXPECT_TRUE(std::holds_alternative<CompletionRequest>(parse(url("allowed/sub/../sub/cat.png"))));
  EXPECT_TRUE(std::holds_alternative<CompletionRequest>(
      parse("file://localhost" + (root_ / "allowed/sub/cat.png").string())));
}

TEST_F(FileUrls, EscapesAreRefused) {
  for (const std::string& u :
       {url("secret/key.png"), url("allowed/../secret/key.png"), url("allowed/link.png"),
        url("allowed/dirlink/key.png"), url("allowed/sub/../../secret/key.png"),
        url("allowed/%2e%2e/secret/key.png"), url("secret/missing.png"), std::string("file:///")}) {
    auto r = parse(u);
    ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << u;
    const ApiError& e = std::get<ApiError>(r);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param.value_or(""), "messages[0].content[0].image_url.url");
    EXPECT_NE(e.message.find("file URL outside the allowed image directories"), std::string::npos)
        << u << " -> " << e.message;
  }
  // Inside an allowed directory a missing file says so.
  auto r = parse(url("allowed/none.png"));
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_NE(std::get<ApiError>(r).message.find("no image file"), std::string::npos);
  // Relative paths are not file URLs we take.
  r = parse("file://allowed/sub/cat.png");
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_NE(std::get<ApiError>(r).message.find("absolute path"), std::string::npos);
}

TEST(CompletionRequest, PromptFormsAndDefaults) {
  auto r = parse_completion_request(R"({"model":"m","prompt":"abc"})");
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(r));
  auto c = std::get<CompletionRequest>(r);
  EXPECT_EQ(c.prompt, "abc");
  EXPECT_EQ(c.config.max_tokens, 16);  // the completions API default
  r = parse_completion_request(R"({"model":"m","prompt":["abc"],"logprobs":2,"max_tokens":3})");
  c = std::get<CompletionRequest>(r);
  EXPECT_EQ(c.prompt, "abc");
  EXPECT_EQ(c.logprobs, 2);
  EXPECT_EQ(c.config.max_tokens, 3);
  r = parse_completion_request(R"({"model":"m","prompt":[1,2,3]})");
  c = std::get<CompletionRequest>(r);
  EXPECT_TRUE(c.prompt_is_tokens);
  EXPECT_EQ(c.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST(CompletionRequest, Errors) {
  EXPECT_EQ(completion_err(R"({"model":"m"})").param.value_or(""), "prompt");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":5})").param.value_or(""), "prompt");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":["a","b"]})").param.value_or(""), "prompt");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":[1,-2]})").param.value_or(""), "prompt[1]");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":"a","logprobs":6})").param.value_or(""),
            "logprobs");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":"a","echo":true})").param.value_or(""), "echo");
  EXPECT_EQ(completion_err(R"({"model":"m","prompt":"a","best_of":2})").param.value_or(""),
            "best_of");
}

}  // namespace
}  // namespace geniex::server
