// The JSON Schema compiler and the constrained-generation matcher: clear errors for what is not
// supported, byte-level acceptance, and the property the engine relies on: every byte path the
// matcher allows can be completed, and every completed output validates (random walks over many
// schemas, checked by an independent nlohmann parse and validates()).
#include "engine/json_schema/matcher.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "engine/json_schema/schema.h"

namespace geniex::engine::json_schema {
namespace {

Schema must(const std::string& text) {
  auto s = compile(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().to_string();
  return s.ok() ? std::move(*s) : Schema{};
}

// Feeds `text` byte by byte; true when every byte is accepted.
bool accepts(Matcher& m, const std::string& text) {
  for (const char c : text) {
    if (!m.feed(std::string_view(&c, 1))) return false;
  }
  return true;
}

bool full(const Schema& s, const std::string& text) {
  Matcher m(s);
  return accepts(m, text) && m.complete();
}

const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "uuid"},
    "tags": {"type": "array", "items": {"enum": ["a", "bb", "b"]}, "maxItems": 3},
    "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "kind": {"anyOf": [{"type": "null"}, {"const": "x"}, {"type": "boolean"}]}
  },
  "required": ["name", "age", "tags"],
  "additionalProperties": false
})";

TEST(JsonSchema, UnsupportedAndInvalidSchemasAreClearErrors) {
  struct Case {
    const char* schema;
    const char* says;
  };
  const Case cases[] = {
      {R"({"type": "string", "pattern": "^a"})", "unsupported keyword 'pattern' at #"},
      {R"({"properties": {"a": {"not": {}}}})", "'not' at #/properties/a"},
      {R"({"$ref": "#/$defs/missing"})", "does not resolve"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems > maxItems"},
      {R"({"type": "string", "format": "email"})", "format \"email\""},
      {R"({"type": "object", "required": ["a"]})", "requires 'a'"},
      {R"({"type": "strange"})", "unknown type 'strange'"},
      {R"({"type": "array", "items": [{}, {}]})", "tuples"},
      {"{not json", "not valid JSON"},
      {"false", "allows no value"},
      {"[1]", "not a schema"},
  };
  for (const Case& c : cases) {
    auto s = compile(c.schema);
    ASSERT_FALSE(s.ok()) << c.schema;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.says), std::string::npos)
        << c.schema << " -> " << s.status().message();
  }
}

TEST(JsonSchema, AcceptsValidAndRejectsInvalidObjects) {
  const Schema s = must(kPerson);
  EXPECT_TRUE(full(s, R"({"name":"Ann","age":31,"tags":[]})"));
  EXPECT_TRUE(
      full(s, R"({ "name": "Bo", "age": 0, "tags": ["a","bb"], "score": 0.5, "kind": null })"));
  EXPECT_TRUE(
      full(s, "{\n  \"name\": \"C\",\n  \"age\": 150,\n  \"tags\": [\"b\"],\n  \"kind\": true\n}"));
  EXPECT_TRUE(full(
      s,
      R"({"name":"D","age":1,"email":"0123abcd-0000-1111-2222-333344445555","tags":["b","b","a"]})"));
  EXPECT_TRUE(full(s, R"({"name":"\u00e9\n","age":2,"tags":[],"kind":"x"})"));
  const char* bad[] = {
      R"({"age":31,"name":"Ann","tags":[]})",              // schema order
      R"({"name":"Ann","tags":[]})",                       // age required
      R"({"name":"","age":3,"tags":[]})",                  // minLength
      R"({"name":"abcdefghijklm","age":3,"tags":[]})",     // maxLength 12
      R"({"name":"A","age":151,"tags":[]})",               // maximum
      R"({"name":"A","age":-1,"tags":[]})",                // minimum
      R"({"name":"A","age":1.5,"tags":[]})",               // integer
      R"({"name":"A","age":1,"tags":["c"]})",              // enum
      R"({"name":"A","age":1,"tags":["a","a","a","a"]})",  // maxItems
      R"({"name":"A","age":1,"tags":[],"score":0})",       // exclusiveMinimum
      R"({"name":"A","age":1,"tags":[],"extra":1})",       // additionalProperties false
      R"({"name":"A","age":1,"email":"xyz","tags":[]})",   // format
      R"({"name":"A","age":1,"tags":[],})",                // trailing comma
      R"({"name":"A","age":01,"tags":[]})",                // leading zero
  };
  for (const char* b : bad) EXPECT_FALSE(full(s, b)) << b;
  // Incomplete is not complete; nothing may follow a complete value.
  Matcher m(s);
  ASSERT_TRUE(accepts(m, R"({"name":"A","age":1,"tags":[])"));
  EXPECT_FALSE(m.complete());
  ASSERT_TRUE(accepts(m, "}"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.feed(" "));
  EXPECT_FALSE(m.feed("{"));
}

TEST(JsonSchema, RejectedFeedsChangeNothingAndWhitespaceIsLimited) {
  const Schema s = must(kPerson);
  Matcher m(s);
  ASSERT_TRUE(m.feed("{\"na"));
  EXPECT_FALSE(m.feed("mX"));    // "namX" is no key: all-or-nothing
  EXPECT_TRUE(m.feed("me\":"));  // the state is still after "na"
  EXPECT_FALSE(m.feed("  "));    // one space at most
  EXPECT_FALSE(m.feed("\n\n"));  // one newline at most
  EXPECT_FALSE(m.feed("\n" + std::string(Matcher::kMaxIndent + 1, ' ')));
  EXPECT_TRUE(m.feed("\n" + std::string(Matcher::kMaxIndent, ' ')));
  EXPECT_FALSE(m.feed(" "));
  EXPECT_TRUE(m.feed("\"ok\""));
}

TEST(JsonSchema, StringsAreValidUtf8AndLengthsCountCharacters) {
  const Schema s = must(R"({"type": "string", "maxLength": 2})");
  EXPECT_TRUE(full(s, "\"\xC3\xA9\xE2\x82\xAC\""));  // two characters, five bytes
  EXPECT_FALSE(full(s, "\"\xC3\xA9\xE2\x82\xAC!\""));
  EXPECT_FALSE(full(s, "\"\x89\""));             // a lone continuation byte
  EXPECT_FALSE(full(s, "\"\xC3\""));             // a truncated character
  EXPECT_FALSE(full(s, "\"\xC0\xAF\""));         // overlong
  EXPECT_FALSE(full(s, "\"\xED\xA0\x80\""));     // a surrogate
  EXPECT_TRUE(full(s, "\"\xF0\x9F\x98\x80\""));  // U+1F600
}

// Escaped surrogates must pair (a lone one is not valid JSON text for most parsers, nlohmann's
// included); a pair is one character. Found by fuzz_json_schema.
TEST(JsonSchema, EscapedSurrogatesMustPair) {
  const Schema s = must(R"({"type": "string", "maxLength": 2})");
  EXPECT_TRUE(full(s, R"("\ud83d\ude00x")"));  // U+1F600 and x: two characters
  EXPECT_FALSE(full(s, R"("\ud83d\ude00xy")"));
  EXPECT_TRUE(full(s, R"("\u00e9\uD7FF")"));
  EXPECT_TRUE(full(s, R"("\uE000")"));
  Matcher lone_low(s);
  EXPECT_TRUE(accepts(lone_low, R"("\ud)"));
  EXPECT_FALSE(lone_low.feed("e"));  // DExx: a low surrogate with no high one before it
  Matcher lone_high(s);
  EXPECT_TRUE(accepts(lone_high, R"("\udbff)"));
  EXPECT_FALSE(lone_high.feed("\""));  // the low half must follow
  EXPECT_FALSE(lone_high.feed("a"));
  EXPECT_FALSE(lone_high.feed("\\n"));
  EXPECT_TRUE(lone_high.feed("\\u"));
  EXPECT_FALSE(lone_high.feed("0"));
  EXPECT_FALSE(lone_high.feed("db"));  // another high half
  EXPECT_TRUE(lone_high.feed("dc00\""));
  EXPECT_TRUE(lone_high.complete());
  const Schema any = must("{}");
  EXPECT_FALSE(full(any, R"("\udefe")"));
}

TEST(JsonSchema, IntegerBoundsRefuseHopelessPrefixesEarly) {
  const Schema s = must(R"({"type": "integer", "minimum": 5, "maximum": 10})");
  Matcher m(s);
  EXPECT_FALSE(m.feed("0"));   // 0 is all "0" can be
  EXPECT_FALSE(m.feed("2"));   // 2, 20-29, ...: none in [5, 10]
  EXPECT_FALSE(m.feed("-"));   // negatives
  EXPECT_TRUE(m.feed("1"));    // 10
  EXPECT_FALSE(m.complete());  // 1 < 5
  EXPECT_FALSE(m.feed("1"));   // 11
  EXPECT_TRUE(m.feed("0"));
  EXPECT_TRUE(m.complete());
  const Schema neg = must(R"({"type": "integer", "maximum": -20})");
  EXPECT_TRUE(full(neg, "-20"));
  EXPECT_TRUE(full(neg, "-123"));
  EXPECT_FALSE(full(neg, "-19"));
  Matcher n(neg);
  EXPECT_FALSE(n.feed("5"));
}

TEST(JsonSchema, EnumsWhosValuesArePrefixesOfOthersAndRecursiveRefs) {
  const Schema e = must(R"({"type": "array", "items": {"enum": [1, 12, "a", {"k": [true]}]}})");
  EXPECT_TRUE(full(e, "[1,12,1]"));
  EXPECT_TRUE(full(e, R"([{"k":[true]},"a"])"));
  EXPECT_FALSE(full(e, "[123]"));
  EXPECT_FALSE(full(e, "[2]"));
  const Schema tree = must(R"({
    "$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"], "additionalProperties": false}},
    "$ref": "#/$defs/node"})");
  EXPECT_TRUE(full(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(full(tree, R"({"v":1,"kids":[{"w":2}]})"));
  const Schema dates = must(R"({"type": "object", "properties": {
      "d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "date-time"}},
      "required": ["d", "t"]})");
  EXPECT_TRUE(full(dates, R"({"d":"2026-12-04","t":"2026-12-04T23:59:00Z"})"));
  EXPECT_FALSE(full(dates, R"({"d":"2026-1-04","t":"2026-12-04T23:59:00Z"})"));
}

// Random walks: from every reachable state some printable byte (or the end) continues, and
// every finished walk is one JSON value that validates. Later in a walk, closing bytes are
// preferred so that walks end.
TEST(JsonSchema, EveryAllowedPathCompletesToAValidValue) {
  const std::string schemas[] = {
      kPerson,
      R"({})",
      R"({"type": "array", "items": {"type": "number", "minimum": -2.5, "maximum": 3}, "minItems": 2, "maxItems": 4})",
      R"({"type": "object", "additionalProperties": {"type": "integer"}})",
      R"({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "array", "items": {"type": "boolean"}}]})",
      R"({"type": ["object", "null"], "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}})",
      R"({"$defs": {"n": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/n"}, "maxItems": 2}}}}, "$ref": "#/$defs/n"})",
  };
  std::mt19937 rng(1234);
  const std::string closers = "\"}]0:,1tfn";
  int finished = 0;
  for (const std::string& text : schemas) {
    const Schema s = must(text);
    for (int walk = 0; walk < 40; ++walk) {
      Matcher m(s);
      std::string out;
      bool ended = false;
      for (int step = 0; step < 3000 && !ended; ++step) {
        std::vector<char> ok;
        for (int b = 0x20; b < 0x7F; ++b) {
          Matcher probe = m;
          const char c = static_cast<char>(b);
          if (probe.feed(std::string_view(&c, 1))) ok.push_back(c);
        }
        if (m.complete() && (ok.empty() || rng() % 4 == 0)) {
          ended = true;
          break;
        }
        ASSERT_FALSE(ok.empty()) << text << "\nstuck after: " << out;
        char pick = ok[rng() % ok.size()];
        if (step > 40) {
          for (const char c : closers) {
            if (std::find(ok.begin(), ok.end(), c) != ok.end()) {
              pick = c;
              break;
            }
          }
        }
        ASSERT_TRUE(m.feed(std::string_view(&pick, 1)));
        out.push_back(pick);
      }
      ASSERT_TRUE(ended) << text << "\nnever ended: " << out;
      EXPECT_TRUE(validates(s, out)) << text << "\n-> " << out;
      EXPECT_FALSE(nlohmann::json::parse(out, nullptr, false).is_discarded()) << out;
      ++finished;
    }
  }
  EXPECT_EQ(finished, 7 * 40);
}

}  // namespace
}  // namespace geniex::engine::json_schema
