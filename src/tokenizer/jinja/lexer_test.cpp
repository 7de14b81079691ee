// Lexer: tokens, string escapes, and whitespace control as jinja2 applies it.
#include "tokenizer/jinja/lexer.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/template.h"

namespace geniex::jinja {
namespace {

std::vector<Token> lex(std::string_view src, LexOptions o = {}) {
  std::string s = normalize_source(src, o);
  LineMap lines(s);
  return tokenize(s, o, lines);
}

std::string render(std::string_view src, ParseOptions o = {}) {
  auto t = Template::parse(src, o);
  if (!t.ok()) return "PARSE: " + t.status().message();
  auto r = t->render(Value::dict());
  return r.ok() ? *r : "RENDER: " + r.status().message();
}

TEST(JinjaLexer, TokenKinds) {
  auto t = lex("a{{ x.y + 1.5e3 // 2 }}b{% if 'q\\n' %}");
  ASSERT_GE(t.size(), 12u);
  EXPECT_EQ(t[0].type, TokType::kText);
  EXPECT_EQ(t[0].value, "a");
  EXPECT_EQ(t[1].type, TokType::kVarBegin);
  EXPECT_EQ(t[2].type, TokType::kName);
  EXPECT_EQ(t[3].value, ".");
  EXPECT_EQ(t[5].value, "+");
  EXPECT_EQ(t[6].type, TokType::kFloat);
  EXPECT_EQ(t[7].value, "//");
  EXPECT_EQ(t[8].type, TokType::kInt);
  EXPECT_EQ(t[9].type, TokType::kVarEnd);
  EXPECT_EQ(t[10].value, "b");
  EXPECT_EQ(t[11].type, TokType::kBlockBegin);
  EXPECT_EQ(t[13].type, TokType::kString);
  EXPECT_EQ(t[13].value, "q\n");
  EXPECT_EQ(t.back().type, TokType::kEof);
}

TEST(JinjaLexer, StringEscapesFollowPython) {
  EXPECT_EQ(render(R"({{ 'a\tb\\c\'d\"e\x41\u00e9\U0001F600\q' }})"), "a\tb\\c'd\"eAé😀\\q");
  EXPECT_EQ(render(R"({{ "x" 'y' }})"), "xy");
}

TEST(JinjaLexer, DictLiteralBracesDoNotCloseTag) {
  EXPECT_EQ(render("{{ {'a': {'b': 1}}['a'] }}"), "{'b': 1}");
}

TEST(JinjaLexer, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b\n  {%- endif -%}\n  c"), "abc");
  EXPECT_EQ(render("a {#- x -#} b"), "ab");
}

TEST(JinjaLexer, TrimAndLstripBlocks) {
  // trim_blocks eats the newline after a tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  // {%+ disables lstrip, +%} disables trim.
  EXPECT_EQ(render("  {%+ if true +%}\nx{% endif %}"), "  \nx");
  // Variables are not lstripped.
  EXPECT_EQ(render("  {{ 'v' }}\n"), "  v");
  // Text before a tag on the same line is kept.
  EXPECT_EQ(render("a {% if true %}b{% endif %}"), "a b");
}

TEST(JinjaLexer, WithoutHuggingFaceOptions) {
  ParseOptions plain;
  plain.trim_blocks = false;
  plain.lstrip_blocks = false;
  EXPECT_EQ(render("  {% if true %}\nx\n  {% endif %}\n", plain), "  \nx\n  ");
}

TEST(JinjaLexer, NewlinesNormalized) { EXPECT_EQ(render("a\r\nb\rc\r\n"), "a\nb\nc"); }

TEST(JinjaLexer, RawBlock) { EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}"); }

TEST(JinjaLexer, LineColumnMapping) {
  LineMap m("ab\ncd\n\nef");
  EXPECT_EQ(m.pos(0).line, 1u);
  EXPECT_EQ(m.pos(1).col, 2u);
  EXPECT_EQ(m.pos(3).line, 2u);
  EXPECT_EQ(m.pos(3).col, 1u);
  EXPECT_EQ(m.pos(7).line, 4u);
}

}  // namespace
}  // namespace geniex::jinja
