// Tool calling: request validation, format detection from the real chat templates, the plans
// (prompt rewrite, reply prefix, constraint schema), and parsing of each family's native output.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "engine/json_schema/matcher.h"
#include "engine/json_schema/schema.h"
#include "server/request.h"

namespace geniex::server {
namespace {

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"},
     "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "search",
   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}])";

ToolsRequest tools_with(const std::string& extra = "") {
  const Json body = Json::parse(std::string(R"({"tools": )") + kTools + extra + "}");
  auto r = parse_tools_request(body);
  EXPECT_TRUE(std::holds_alternative<ToolsRequest>(r));
  return std::get<ToolsRequest>(r);
}

std::string read_template(const std::string& name) {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");  // set by ctest
  std::ifstream f(std::string(root ? root : ".") + "/tests/data/chat_templates/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ToolCalls, DetectsEachFamilyFromItsTemplate) {
  EXPECT_EQ(detect_tool_format(read_template("qwen2.5.jinja")), ToolFormat::kHermes);
  EXPECT_EQ(detect_tool_format(read_template("qwen3.jinja")), ToolFormat::kHermes);
  EXPECT_EQ(detect_tool_format(read_template("mistral-v0.3.jinja")), ToolFormat::kMistral);
  EXPECT_EQ(detect_tool_format(read_template("mistral-nemo.jinja")), ToolFormat::kMistral);
  EXPECT_EQ(detect_tool_format(read_template("lfm2.jinja")), ToolFormat::kLfm2);
  EXPECT_EQ(detect_tool_format(read_template("llama3.2.jinja")), ToolFormat::kLlama3);
  EXPECT_EQ(detect_tool_format(read_template("gemma3.jinja")), ToolFormat::kGeneric);
  EXPECT_EQ(detect_tool_format(read_template("llama3.jinja")), ToolFormat::kGeneric);
}

TEST(ToolCalls, BadToolDefinitionsAreFourHundredsNamingTheField) {
  auto err = [](const std::string& body) {
    auto r = parse_tools_request(Json::parse(body));
    EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  };
  EXPECT_EQ(err(R"({"tools": {}})").param, "tools");
  EXPECT_EQ(err(R"({"tools": [{"type": "function"}]})").param, "tools[0].function");
  EXPECT_EQ(err(R"({"tools": [{"type": "code_interpreter"}]})").param, "tools[0].type");
  EXPECT_EQ(err(R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})").param,
            "tools[0].function.name");
  EXPECT_EQ(err(R"({"tools": [{"type": "function", "function": {"name": "f",
                 "parameters": []}}]})")
                .param,
            "tools[0].function.parameters");
  EXPECT_EQ(err(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                              {"type": "function", "function": {"name": "f"}}]})")
                .param,
            "tools[1].function.name");
  EXPECT_EQ(err(R"({"tool_choice": "required"})").param, "tool_choice");
  EXPECT_EQ(err(R"({"tool_choice": "sometimes"})").param, "tool_choice");
  EXPECT_EQ(err(std::string(R"({"tools": )") + kTools +
                R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})")
                .param,
            "tool_choice.function.name");
  EXPECT_EQ(err(R"({"parallel_tool_calls": "yes"})").param, "parallel_tool_calls");
}

TEST(ToolCalls, ToolMessagesMustAnswerAnEarlierCall) {
  const std::string tools = std::string(R"("tools": )") + kTools;
  auto ok = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "cold"}], )" +
                               tools + "}");
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(ok));
  const auto& r = std::get<CompletionRequest>(ok);
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, R"({"city": "Oslo"})");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "c1");
  EXPECT_EQ(r.tools.defs.size(), 2u);

  auto orphan = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "tool", "tool_call_id": "c9", "content": "x"}]})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(orphan));
  EXPECT_EQ(std::get<ApiError>(orphan).param, "messages[1].tool_call_id");
  auto no_id = parse_chat_request(R"({"messages": [{"role": "tool", "content": "x"}]})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(no_id));
  EXPECT_EQ(std::get<ApiError>(no_id).param, "messages[0].tool_call_id");
  auto both = parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}],
      "response_format": {"type": "json_object"}, )" +
                                 tools + "}");
  ASSERT_TRUE(std::holds_alternative<ApiError>(both));
}

// Every plan that constrains the reply: its schema compiles, and what the parser reads back is
// a call of an offered tool whose arguments satisfy that tool's schema.
TEST(ToolCalls, ConstrainedPlansParseBackIntoCalls) {
  const std::vector<ChatMessage> msgs = {{"user", "weather in Oslo?"}};
  struct Case {
    ToolFormat f;
    const char* reply;
    const char* prefix;
  };
  const Case cases[] = {
      {ToolFormat::kHermes, R"({"name": "get_weather", "arguments": {"city": "Oslo"}})",
       "<tool_call>\n"},
      {ToolFormat::kLlama3, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})", ""},
      {ToolFormat::kMistral, R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}])",
       "[TOOL_CALLS]"},
      {ToolFormat::kLfm2, R"([{"name": "get_weather", "arguments": {"city": "Oslo"}}])",
       "<|tool_call_start|>"},
      {ToolFormat::kGeneric,
       R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]})", ""},
  };
  const ToolsRequest tr = tools_with(R"(, "tool_choice": "required")");
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(tool_format_name(c.f)));
    const ToolPlan p = plan_tools(c.f, tr, msgs);
    ASSERT_TRUE(p.constrained());
    EXPECT_EQ(p.options.reply_prefix, c.prefix);
    auto schema = engine::json_schema::compile(p.schema);
    ASSERT_TRUE(schema.ok()) << schema.status().to_string();
    engine::json_schema::Matcher m(*schema);
    EXPECT_TRUE(m.feed(c.reply));
    EXPECT_TRUE(m.complete());
    const ParsedReply r = parse_reply(p, tr, c.reply);
    EXPECT_EQ(r.error, "");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
    EXPECT_EQ(r.calls[0].id.size(), c.f == ToolFormat::kMistral ? 9u : 29u);
    // The schema refuses a call of a tool that is not offered and arguments without "city".
    engine::json_schema::Matcher bad(*schema);
    const std::string wrong =
        std::string(c.reply).replace(std::string(c.reply).find("Oslo") - 8, 4, "town");
    EXPECT_FALSE(bad.feed(wrong) && bad.complete()) << wrong;
  }
}

TEST(ToolCalls, NamedChoiceConstrainsToThatToolAndParallelFalseToOneCall) {
  const ToolsRequest tr = tools_with(
      R"(, "tool_choice": {"type": "function", "function": {"name": "search"}},
          "parallel_tool_calls": false)");
  const ToolPlan p = plan_tools(ToolFormat::kMistral, tr, {{"user", "x"}});
  auto schema = engine::json_schema::compile(p.schema);
  ASSERT_TRUE(schema.ok());
  engine::json_schema::Matcher ok(*schema);
  EXPECT_TRUE(ok.feed(R"([{"name": "search", "arguments": {"q": "cats"}}])") && ok.complete());
  engine::json_schema::Matcher other(*schema);
  EXPECT_FALSE(other.feed(R"([{"name": "get_weather")"));
  engine::json_schema::Matcher two(*schema);
  EXPECT_FALSE(two.feed(R"([{"name": "search", "arguments": {}}, {)"));
}

TEST(ToolCalls, GenericPlanRewritesTheConversationForStrictTemplates) {
  const ToolsRequest tr = tools_with();
  std::vector<ChatMessage> msgs = {{"user", "weather?"}, {"assistant", ""}, {"tool", "cold"}};
  msgs[1].tool_calls = {{"c1", "get_weather", R"({"city":"Oslo"})"}};
  msgs[2].tool_call_id = "c1";
  msgs.push_back({"user", "and tomorrow?"});
  const ToolPlan p = plan_tools(ToolFormat::kGeneric, tr, msgs);
  ASSERT_EQ(p.messages.size(), 4u);  // system, user, assistant, user (result + question)
  EXPECT_EQ(p.messages[0].role, "system");
  EXPECT_NE(p.messages[0].content.find("get_weather"), std::string::npos);
  EXPECT_EQ(p.messages[2].role, "assistant");
  EXPECT_EQ(Json::parse(p.messages[2].content)["tool_calls"][0]["arguments"]["city"], "Oslo");
  EXPECT_EQ(p.messages[3].role, "user");
  EXPECT_NE(p.messages[3].content.find(R"("name":"get_weather")"), std::string::npos);
  EXPECT_NE(p.messages[3].content.find("and tomorrow?"), std::string::npos);
  EXPECT_TRUE(p.options.tools.empty());
  // auto: an answer without a tool is allowed and comes back as content.
  const ParsedReply r = parse_reply(p, tr, R"({"content": "It is cold."})");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "It is cold.");
}

TEST(ToolCalls, ParsesEachFamilysFreeOutput) {
  const ToolsRequest tr = tools_with();
  auto parse = [&](ToolFormat f, const std::string& text) {
    return parse_reply(plan_tools(f, tr, {{"user", "x"}}), tr, text);
  };
  auto h = parse(ToolFormat::kHermes,
                 "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                 "{\"city\": \"Rome\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", "
                 "\"arguments\": {\"q\": \"rome\"}}\n</tool_call>");
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[1].name, "search");
  EXPECT_EQ(h.content, "Let me check.");
  auto l = parse(ToolFormat::kLlama3,
                 R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}})");
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(l.calls[0].arguments, R"({"city":"Rome"})");
  auto l2 = parse(
      ToolFormat::kLlama3,
      R"({"name": "get_weather", "parameters": {"city": "a;b"}}; {"name": "search", "parameters": {}})");
  ASSERT_EQ(l2.calls.size(), 2u) << "a ';' inside a string is not a separator";
  EXPECT_EQ(l2.calls[0].arguments, R"({"city":"a;b"})");
  auto plain = parse(ToolFormat::kLlama3, R"({"answer": 42})");
  EXPECT_TRUE(plain.calls.empty());
  EXPECT_EQ(plain.content, R"({"answer": 42})");
  EXPECT_EQ(plain.error, "");
  auto m = parse(ToolFormat::kMistral,
                 R"([TOOL_CALLS][{"name": "search", "arguments": {"q": "x"}, "id": "abc123def"}])");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].id.size(), 9u);
  auto lf = parse(ToolFormat::kLfm2,
                  "<|tool_call_start|>[get_weather(city=\"Paris\", unit='c'), search(q=None)]"
                  "<|tool_call_end|>Checking.");
  ASSERT_EQ(lf.calls.size(), 2u);
  EXPECT_EQ(lf.calls[0].arguments, R"({"city":"Paris","unit":"c"})");
  EXPECT_EQ(lf.calls[1].arguments, R"({"q":null})");
  EXPECT_EQ(lf.content, "Checking.");
  auto lj =
      parse(ToolFormat::kLfm2,
            R"(<|tool_call_start|>[{"name": "search", "arguments": {"q": "x"}}]<|tool_call_end|>)");
  ASSERT_EQ(lj.calls.size(), 1u);
  auto text = parse(ToolFormat::kHermes, "Just text.");
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.content, "Just text.");
}

TEST(ToolCalls, BrokenCallsAreNeverPassedOn) {
  const ToolsRequest tr = tools_with();
  auto parse = [&](ToolFormat f, const std::string& text) {
    return parse_reply(plan_tools(f, tr, {{"user", "x"}}), tr, text);
  };
  const std::string broken = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci";
  auto b = parse(ToolFormat::kHermes, broken);
  EXPECT_TRUE(b.calls.empty());
  EXPECT_FALSE(b.error.empty());
  EXPECT_EQ(b.content, broken);
  auto unknown =
      parse(ToolFormat::kHermes, "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>");
  EXPECT_TRUE(unknown.calls.empty());
  EXPECT_NE(unknown.error.find("rm_rf"), std::string::npos);
  auto args = parse(ToolFormat::kMistral, R"([TOOL_CALLS][{"name": "search", "arguments": 3}])");
  EXPECT_TRUE(args.calls.empty());
  EXPECT_FALSE(args.error.empty());
  auto py = parse(ToolFormat::kLfm2, "<|tool_call_start|>[search(q=)]<|tool_call_end|>");
  EXPECT_TRUE(py.calls.empty());
  EXPECT_FALSE(py.error.empty());
  // A constrained reply cut short by max_tokens.
  const ToolsRequest req = tools_with(R"(, "tool_choice": "required")");
  const ToolPlan p = plan_tools(ToolFormat::kHermes, req, {{"user", "x"}});
  auto cut = parse_reply(p, req, R"({"name": "get_weather", "argu)");
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_FALSE(cut.error.empty());
}

TEST(ToolCalls, StreamingHoldsBackWhatMayStartACall) {
  EXPECT_EQ(streamable_prefix(ToolFormat::kHermes, "Hello"), 5u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kHermes, "Hello <tool_call>{\"na"), 6u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kHermes, "a < b"), 5u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kMistral, "ok [TOOL"), 3u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kLfm2, "x<|tool_call_start|>[f()]"), 1u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kLlama3, "  {\"name\""), 0u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kLlama3, "<|py"), 0u);
  EXPECT_EQ(streamable_prefix(ToolFormat::kLlama3, "Sure, "), 6u);
}

TEST(ToolCalls, PythonicCallLists) {
  auto j = parse_pythonic_calls(R"([f(a=1, b=-2.5, c=True, d=[1, 'x'], e={'k': "v"}), g()])");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->dump(),
            R"([{"name":"f","arguments":{"a":1,"b":-2.5,"c":true,"d":[1,"x"],"e":{"k":"v"}}},)"
            R"({"name":"g","arguments":{}}])");
  EXPECT_FALSE(parse_pythonic_calls("f(a=1)").has_value());
  EXPECT_FALSE(parse_pythonic_calls("[f(a=1]").has_value());
  EXPECT_FALSE(parse_pythonic_calls("[f(1)]").has_value());
  EXPECT_FALSE(parse_pythonic_calls(std::string(200, '[')).has_value());
}

}  // namespace
}  // namespace geniex::server

namespace geniex::server {
namespace {

TEST(ToolCalls, GenericAnswersStreamAsTheyAreDecoded) {
  EXPECT_FALSE(generic_content_prefix("").has_value());
  EXPECT_FALSE(generic_content_prefix("{\"con").has_value());
  EXPECT_FALSE(generic_content_prefix(R"({"tool_calls": [)").has_value());
  EXPECT_EQ(generic_content_prefix(R"({ "content": ")"), "");
  EXPECT_EQ(generic_content_prefix(R"({"content": "a\nb \)"), "a\nb ");  // escape cut in half
  EXPECT_EQ(generic_content_prefix(R"({"content": "a\nb \")"), "a\nb \"");
  EXPECT_EQ(generic_content_prefix(R"({"content": "a\"b\u00e9 \ud83d)"), "a\"b\xC3\xA9 ");
  EXPECT_EQ(generic_content_prefix(R"({"content": "\ud83d\ude00!"})"), "\xF0\x9F\x98\x80!");
  // A reply cut by max_tokens keeps the answer so far.
  const Json body = Json::parse(std::string(R"({"tools": )") + kTools + "}");
  const ToolsRequest tr = std::get<ToolsRequest>(parse_tools_request(body));
  const ToolPlan p = plan_tools(ToolFormat::kGeneric, tr, {{"user", "x"}});
  const ParsedReply r = parse_reply(p, tr, R"({"content": "It is co)");
  EXPECT_EQ(r.content, "It is co");
  EXPECT_EQ(r.error, "");
}

}  // namespace
}  // namespace geniex::server
