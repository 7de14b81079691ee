// Error handling: every malformed or hostile template yields a Status (with line:column where
// known) and never crashes or hangs.
#include <gtest/gtest.h>

#include "tokenizer/jinja/chat_template.h"

namespace geniex::jinja {
namespace {

Status parse_error(std::string_view src) {
  auto t = Template::parse(src);
  return t.ok() ? Status() : t.status();
}

Status render_error(std::string_view src, RenderLimits limits = {}) {
  auto t = Template::parse(src);
  if (!t.ok()) return t.status();
  RenderEnv env;
  env.limits = limits;
  auto r = t->render(Value::dict(), env);
  return r.ok() ? Status() : r.status();
}

TEST(JinjaErrors, SyntaxErrorHasLineAndColumn) {
  Status s = parse_error("line one\n{% if x %}\n  {{ a + }}\n{% endif %}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at 3:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("syntax error"), std::string::npos) << s.message();
}

TEST(JinjaErrors, UnknownFilterAndTestAreNamed) {
  Status s = parse_error("{{ x | frobnicate }}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1:"), std::string::npos) << s.message();
  s = parse_error("{% if false %}{{ x is wibbly }}{% endif %}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("wibbly"), std::string::npos) << s.message();
}

TEST(JinjaErrors, UnclosedBlocks) {
  for (const char* src :
       {"{% for x in y %}abc", "{% if x %}", "{% macro m() %}", "{% set x %}abc", "{{ x ",
        "{% if x ", "{# comment", "{% raw %}abc", "{{ 'unterminated }}"}) {
    Status s = parse_error(src);
    EXPECT_FALSE(s.ok()) << src;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << src << ": " << s.to_string();
  }
  Status s = parse_error("{% for x in y %}\n{% if x %}\n{% endfor %}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("endif"), std::string::npos) << s.message();
}

TEST(JinjaErrors, StrayEndTagsAndUnknownTags) {
  EXPECT_FALSE(parse_error("{% endfor %}").ok());
  EXPECT_FALSE(parse_error("{% frob %}").ok());
  EXPECT_FALSE(parse_error("{% break %}").ok());
  EXPECT_EQ(parse_error("{% include 'x' %}").code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(parse_error("{{ (1, ]] }}").ok());
  EXPECT_FALSE(parse_error("{{ }}").ok());
  EXPECT_FALSE(parse_error("{{ 99999999999999999999999 }}").ok());
}

TEST(JinjaErrors, RaiseExceptionCarriesMessageAndPosition) {
  Status s = render_error("ok\n{{ raise_exception('Conversation roles must alternate') }}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("raise_exception at 2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Conversation roles must alternate"), std::string::npos)
      << s.message();
}

TEST(JinjaErrors, UndefinedAttributeAndTypeErrors) {
  Status s = render_error("{{ missing.attr }}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'missing' is undefined"), std::string::npos) << s.message();
  EXPECT_FALSE(render_error("{{ 1 + 'a' }}").ok());
  EXPECT_FALSE(render_error("{{ [] < 1 }}").ok());
  EXPECT_FALSE(render_error("{{ none() }}").ok());
  EXPECT_FALSE(render_error("{{ 1 // 0 }}").ok());
  EXPECT_FALSE(render_error("{% for x in 5 %}{% endfor %}").ok());
  EXPECT_FALSE(render_error("{% set a, b = [1] %}").ok());
  EXPECT_FALSE(render_error("{% set x = 1 %}{% set x.y = 2 %}").ok());
  EXPECT_FALSE(render_error("{{ 9223372036854775807 + 1 }}").ok());
  EXPECT_FALSE(render_error("{{ [1].append(2) }}").ok());
}

TEST(JinjaErrors, RecursionIsBounded) {
  Status s = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
}

TEST(JinjaErrors, OutputSizeIsBounded) {
  RenderLimits l;
  l.max_output_bytes = 1 << 16;
  EXPECT_EQ(render_error("{{ 'x' * 100000 }}", l).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_error("{% for i in range(100000) %}xxxxxxxx{% endfor %}", l).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_error("{% set s = namespace(v='ab') %}{% for i in range(40) %}{% set s.v = s.v "
                         "~ s.v %}{% endfor %}",
                         l)
                .code(),
            StatusCode::kResourceExhausted);
}

TEST(JinjaErrors, LoopsAndRangesAreBounded) {
  RenderLimits l;
  l.max_loop_iterations = 1000;
  EXPECT_EQ(
      render_error("{% for i in range(50) %}{% for j in range(50) %}{% endfor %}{% endfor %}", l)
          .code(),
      StatusCode::kResourceExhausted);
  EXPECT_EQ(render_error("{{ range(1000000)|length }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_error("{{ ([1] * 100000000)|length }}").code(), StatusCode::kResourceExhausted);
}

TEST(JinjaErrors, DeepNestingIsASyntaxErrorNotACrash) {
  std::string deep(5000, '(');
  EXPECT_FALSE(parse_error("{{ " + deep + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(parse_error(ifs).ok());
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_FALSE(parse_error(nots + "x }}").ok());
}

TEST(JinjaErrors, ChatTemplateParseErrorIsReported) {
  ChatTemplateInputs in;
  auto r = render_chat_template("{% for m in messages %}", in);
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace geniex::jinja
