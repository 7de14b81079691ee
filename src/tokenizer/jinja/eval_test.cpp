// Expression and statement semantics checked against Python jinja2 3.1.6 (expected values
// were produced by jinja2 with trim_blocks/lstrip_blocks and transformers' tojson).
#include <gtest/gtest.h>

#include "tokenizer/jinja/chat_template.h"

namespace geniex::jinja {
namespace {

struct Case {
  const char* tmpl;
  const char* want;  // nullptr: jinja2 raises
};

// Context: d={'a':1,'b':[1,2]}, s='héllo wörld', n=7, items=['x','y','z'], nothing=None,
// msgs=[{role:user,content:hi},{role:assistant,content:yo}]
const Case kCases[] = {
    {R"J({% set x = 0 %}{% for i in [1,2] %}{% set x = x + i %}{{x}} {% endfor %}{{x}})J",
     R"J(1 2 0)J"},
    {R"J({% if true %}{% set y = 3 %}{% endif %}{{y}})J", R"J(3)J"},
    {R"J({{ [1,2.5,'a',none,true,{'k':'v'}] }})J", R"J([1, 2.5, 'a', None, True, {'k': 'v'}])J"},
    {R"J({{ 1.0 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 2**-1 }})J",
     R"J(1.0 1e+20 1e+16 1000000000000000.0 0.0001 1e-05 0.3333333333333333 5.0 3 -4 2 1024 0.5)J"},
    {R"J({{ 'it\'s' }} {{ ['it\'s', 'a"b', 'x\ny'] }})J", R"J(it's ["it's", 'a"b', 'x\ny'])J"},
    {R"J({{ x.y }})J", nullptr},
    {R"J({{ x }}|{{ x is defined }}|{{ x|length }}|{{ x ~ 'a' }})J", R"J(|False|0|a)J"},
    {R"J({{ x + 'a' }})J", nullptr},
    {R"J({{ 'abc'.foo }}|{{ ('abc'.foo) is defined }})J", R"J(|False)J"},
    {R"J({{ [1,2,3][5] }}|{{ none.foo }}|)J", R"J(||)J"},
    {R"J({{ 'ab' * 3 }} {{ [1] * 2 }} {{ [1]+[2] }} {{ true + 1 }} {{ true == 1 }} {{ 1 == 1.0 }})J",
     R"J(ababab [1, 1] [1, 2] 2 True True)J"},
    {R"J({{ {'a':1} | tojson }} {{ {'b':1,'a':[1,2]} | tojson(indent=2) }} {{ 'é"\n' | tojson }} {{ [] | tojson(indent=2) }} {{ 1.5|tojson }} {{ d|tojson(separators=(',',':')) }} {{ d|tojson(sort_keys=true) }})J",
     R"J({"a": 1} {
  "b": 1,
  "a": [
    1,
    2
  ]
} "é\"\n" [] 1.5 {"a":1,"b":[1,2]} {"a": 1, "b": [1, 2]})J"},
    {R"J({{ range(3)|list }} {{ range(1,10,3)|list }} {{ range(5,0,-2)|list }})J",
     R"J([0, 1, 2] [1, 4, 7] [5, 3, 1])J"},
    {R"J({{ 'a' in 'cab' }} {{ 1 in [1,2] }} {{ 'k' in {'k':1} }} {{ 'z' not in items }})J",
     R"J(True True True False)J"},
    {R"J({% for a,b in [[1,2],[3,4]] %}{{a}}{{b}}{% endfor %}{% for k, v in d.items() %}{{k}}={{v}};{% endfor %})J",
     R"J(1234a=1;b=[1, 2];)J"},
    {R"J({{ 'Hello World'.split() }} {{ 'a,b'.split(',') }} {{ ' x '.strip() }} {{ 'a b c'.split(' ', 1) }} {{ '  a  b '.split() }})J",
     R"J(['Hello', 'World'] ['a', 'b'] x ['a', 'b c'] ['a', 'b'])J"},
    {R"J({{ '%s-%d' % ('a', 3) }} {{ '%s!' % 'x' }})J", R"J(a-3 x!)J"},
    {R"J({{ 'abc'[::-1] }} {{ [1,2,3][1:] }} {{ s[1:3] }} {{ s|length }} {{ s[-3:] }} {{ items[::2] }} {{ items[:-1] }} {{ s[::-2] }} {{ s[10:] }})J",
     R"J(cba [2, 3] él 11 rld ['x', 'z'] ['x', 'y'] drwolh d)J"},
    {R"J({{ 3 is divisibleby 3 }} {{ 'a' is string }} {{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1.0 is integer }} {{ [] is iterable }} {{ 'a' is iterable }} {{ {} is sequence }} {{ 'a' is sequence}} {{ d is mapping }} {{ nothing is none }} {{ 2 is even }} {{ 3 is odd }} {{ 'abc' is lower }} {{ 1 is eq 1 }} {{ 3 is gt 2 }})J",
     R"J(True True True True False False True True True True True True True True True True True)J"},
    {R"J({{ x | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ x|d('z') }})J",
     R"J(d  d z)J"},
    {R"J({{ [3,1,2]|sort }} {{ [3,1,2]|sort(reverse=true) }} {{ ['b','A','a']|sort }} {{ [1,1,2]|unique|list }} {{ ['a','A','b']|unique|list }} {{ msgs|sort(attribute='role')|map(attribute='content')|list }})J",
     R"J([1, 2, 3] [3, 2, 1] ['A', 'a', 'b'] [1, 2] ['a', 'b'] ['yo', 'hi'])J"},
    {R"J({{ [1,2]|reverse|list }} {{ 'ab'|reverse }} {{ [1,2]|first }} {{ [1,2]|last }} {{ 'abc'|first }})J",
     R"J([2, 1] ba 1 2 a)J"},
    {R"J({{ {'b':1,'a':2}|dictsort }} {{ {'b':1,'a':2}|items|list }})J",
     R"J([('a', 2), ('b', 1)] [('b', 1), ('a', 2)])J"},
    {R"J({{ 'a b c'|wordcount }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.4|round(0,'ceil') }} {{ [1,2]|sum }} {{ [3,1]|min }} {{ [3,1]|max }} {{ 2.675|round(2) }} {{ 1|round }})J",
     R"J(3 3 2.57 2.0 4.0 3.0 3 1 3 2.67 1)J"},
    {R"J({{ 'x'|int }} {{ '3'|int }} {{ '3.7'|float }} {{ 3.7|int }} {{ 3|float }} {{ 3|string }} {{ '3.7'|int }} {{ ' 42 '|int }} {{ 'abc'|float }})J",
     R"J(0 3 3.7 3 3.0 3 3 42 0.0)J"},
    {R"J({{ [1,2]|join }} {{ ['a','b']|join(', ') }} {{ [{'n':'a'},{'n':'b'}]|map(attribute='n')|join }} {{ ['a','b']|map('upper')|list }} {{ msgs|join(', ', attribute='role') }})J",
     R"J(12 a, b ab ['A', 'B'] user, assistant)J"},
    {R"J({{ [1,2,3,4]|select('odd')|list }} {{ [1,2,3,4]|reject('odd')|list }} {{ [{'r':'u'},{'r':'a'}]|selectattr('r','equalto','u')|list }} {{ [{'r':'u'},{'x':1}]|selectattr('r')|list }} {{ msgs|rejectattr('role', '==', 'user')|list }})J",
     R"J([1, 3] [2, 4] [{'r': 'u'}] [{'r': 'u'}] [{'role': 'assistant', 'content': 'yo'}])J"},
    {R"J({{ 'hello world'|title }} {{ 'hello World'|capitalize }} {{ 'a\nb'|indent(2) }} {{ 'a\nb'|indent(2, true) }} {{ 'a\n\nb\n'|indent }} {{ 'a\n\nb'|indent(blank=true) }} {{ 'x-y (z) [w] <v>'|title }})J",
     R"J(Hello World Hello world a
  b   a
  b a

    b
 a
    
    b X-Y (Z) [W] <V>)J"},
    {R"J({% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a }} {{ ns }})J",
     R"J(2 <Namespace {'a': 2}>)J"},
    {R"J({% macro m(a, b='x') %}[{{a}}{{b}}]{% endmacro %}{{ m(1) }}{{ m(1, b=2) }}{{ m }}{{ m(b=3, a=4) }})J",
     R"J([1x][12]<Macro 'm'>[43])J"},
    {R"J({% macro m() %}<{{ caller() }}>{% endmacro %}{% call m() %}in{% endcall %})J",
     R"J(<in>)J"},
    {R"J({% macro m(x) %}<{{ caller(x*2) }}>{% endmacro %}{% call(v) m(4) %}got {{ v }}{% endcall %})J",
     R"J(<got 8>)J"},
    {R"J({{ raise_exception('boom') }})J", nullptr},
    {R"J({{ [1,2].append(3) }})J", nullptr},
    {R"J({% set x %}abc{% endset %}{{ x }}{% set y | upper %}def{% endset %}{{ y }})J",
     R"J(abcDEF)J"},
    {R"J({{ 5 / 0 }})J", nullptr},
    {R"J({% for x in [] %}a{% else %}empty{% endfor %})J", R"J(empty)J"},
    {R"J({% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{loop.revindex}}-{{loop.index}}-{{loop.first}}-{{loop.last}}-{{loop.length}} {% endfor %})J",
     R"J(-2-3-1-True-False-3 1-3-2-2-False-False-3 2--1-3-False-True-3 )J"},
    {R"J({{ 1 if false }}|{{ 'a' if true else 'b' }}|{{ 'a' if false else 'b' if false else 'c' }})J",
     R"J(|a|c)J"},
    {R"J({{ 'abc'.upper() }} {{ 'a-b'.replace('-', '+') }} {{ 'ab'.startswith('a') }} {{ 'ab'.startswith(('x','a')) }} {{ 'ab'.endswith('b') }} {{ 'Hi There'.lower() }} {{ 'hi there'.title() }})J",
     R"J(ABC a+b True True True hi there Hi There)J"},
    {R"J({{ {'a':1}.get('b') }} {{ {'a':1}.get('b', 2) }} {{ {'a':1}.get('a') }} {{ d.keys()|list }} {{ d.values()|list }})J",
     R"J(None 2 1 ['a', 'b'] [1, [1, 2]])J"},
    {R"J({{ 'a' ~ 1 ~ none ~ true }})J", R"J(a1NoneTrue)J"},
    {R"J({{ 1 < 2 < 3 }} {{ 'a' < 'b' }} {{ [1] == [1] }} {{ {'a':1} == {'a':1} }} {{ 2 <= 2 }} {{ 3 >= 4 }} {{ 1 != 1.0 }})J",
     R"J(True True True True True False False)J"},
    {R"J({{ [1,2,3]|batch(2)|list }} {{ 'x'|center(5) }} {{ [1,2,3]|batch(2, 0)|list }})J",
     R"J([[1, 2], [3]]   x   [[1, 2], [3, 0]])J"},
    {R"J({{ 1 + 'a' }})J", nullptr},
    {R"J({{ 0.1 + 0.2 }} {{ 1e100 }} {{ 123456789012345678 }} {{ 1.5e-7 }} {{ -0.0 }} {{ 3.0 * 2 }} {{ 7 % -3 }} {{ -7.5 // 2 }} {{ 2 ** 0.5 }})J",
     R"J(0.30000000000000004 1e+100 123456789012345678 1.5e-07 -0.0 6.0 -2 -4.0 1.4142135623730951)J"},
    {R"J({{ 'a' 'b' }} {{ {'a':1}|length }} {{ none|string }} {{ '  a  '|trim }}|{{ 'xxaxx'|trim('x') }})J",
     R"J(ab 1 None a|a)J"},
    {R"J({%- for m in msgs -%}
  {{ m.role }}:{{ m['content'] }}
{%- endfor %})J",
     R"J(user:hiassistant:yo)J"},
    {R"J({% for m in msgs %}
    {% if m.role == 'user' %}
U {{ m.content }}
    {% else %}
A {{ m.content }}
    {% endif %}
{% endfor %})J",
     R"J(U hi
A yo
)J"},
    {R"J(  {% if true %}
  x
  {% endif %}
  {{ 'y' }}
  {#- comment #}
z)J",
     R"J(  x
  yz)J"},
    {R"J(a {# c #} b {#- c -#} c
    {# own line #}
d)J",
     R"J(a  bc
d)J"},
    {R"J({% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
     R"J(0134)J"},
    {R"J({% for x in items if x != 'y' %}{{ loop.index }}{{ x }}{{ loop.last }}{% endfor %})J",
     R"J(1xFalse2zTrue)J"},
    {R"J({% raw %}{{ not parsed }}{% endraw %})J", R"J({{ not parsed }})J"},
    {R"J({{ "line1\nline2"|replace("\n", " ") }} {{ 'aaa'|replace('a', 'b', 2) }})J",
     R"J(line1 line2 bba)J"},
    {R"J({{ msgs[0].role }} {{ msgs[-1]['content'] }} {{ msgs|length }} {{ msgs[0] }})J",
     R"J(user yo 2 {'role': 'user', 'content': 'hi'})J"},
    {R"J({{ 'a\tb' }}{{ '\u00e9\x41' }})J", R"J(a	béA)J"},
    {R"J({{ d.b[1] }} {{ d['b'][-1] }} {{ d.b.0 }})J", R"J(2 2 1)J"},
    {R"J({{ dict(a=1, b=2) }} {{ dict(a=1).items()|list }})J", R"J({'a': 1, 'b': 2} [('a', 1)])J"},
    {R"J({{ "{}-{}".format(1, 'x') }} {{ "{a}".format(a=3) }})J", R"J(1-x 3)J"},
    {R"J({{ not true }} {{ not none }} {{ true and 'x' }} {{ 0 or '' }} {{ none or 5 }})J",
     R"J(False True x  5)J"},
    {R"J({{ -n }} {{ +n }} {{ -n|abs }} {{ n - -1 }})J", R"J(-7 7 7 8)J"},
    {R"J({% filter upper %}abc{{ 'd' }}{% endfilter %})J", R"J(ABCD)J"},
    {R"J({{ '%.2f' % 3.14159 }} {{ '%5d|' % 42 }})J", R"J(3.14    42|)J"},
    {R"J({{ [['b', 2], ['a', 1]]|sort }} {{ [('x', 1)] }} {{ (1,) }} {{ () }})J",
     R"J([['a', 1], ['b', 2]] [('x', 1)] (1,) ())J"},
    {R"J({{ msgs|map(attribute='role')|unique|list|length }} {{ msgs|selectattr('role', 'in', ['user'])|list|length }})J",
     R"J(2 1)J"},
    {R"J({{ "ß".upper() }} {{ "ÀÉ".lower() }})J", R"J(SS àé)J"},
    {R"J({{ items|count }} {{ s.count('l') }} {{ s.find('l') }} {{ s.replace('l', 'L') }}
)J",
     R"J(3 3 2 héLLo wörLd)J"},
};

Value context() {
  return json_to_value(nlohmann::ordered_json::parse(
      R"({"d": {"a": 1, "b": [1, 2]}, "s": "h\u00e9llo w\u00f6rld", "n": 7, "items": ["x", "y", "z"],
          "nothing": null, "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"));
}

TEST(JinjaEval, MatchesJinja2) {
  Value ctx = context();
  int i = 0;
  for (const auto& c : kCases) {
    auto t = Template::parse(c.tmpl);
    ASSERT_TRUE(t.ok()) << "case " << i << ": " << c.tmpl << "\n" << t.status().to_string();
    auto r = t->render(ctx);
    if (c.want) {
      ASSERT_TRUE(r.ok()) << "case " << i << ": " << c.tmpl << "\n" << r.status().to_string();
      EXPECT_EQ(*r, c.want) << "case " << i << ": " << c.tmpl;
    } else {
      EXPECT_FALSE(r.ok()) << "case " << i << " should fail: " << c.tmpl << "\ngot: " << *r;
    }
    ++i;
  }
}

// A namespace that holds itself (in a tuple or a list) is a reference
// cycle; the render's container arena must free it (the ASan stage's LeakSanitizer fails this
// test otherwise; libFuzzer found it as `ns,system_prompt` typed for `ns.system_prompt`).
TEST(JinjaEval, SelfReferencingNamespacesDoNotLeak) {
  const char* kTemplates[] = {
      "{% set ns = namespace(a='x') %}{% set ns.a = ns, 'y' %}{{ ns.a[1] }}",
      "{% set ns = namespace(a=[]) %}{% set ns.a = [ns, [ns]] %}{{ ns.a|length }}",
      "{% set ns = namespace(l=[]) %}{% set ns.l = ns.l + [ns] %}{{ ns.l|length }}",
  };
  const char* kWant[] = {"y", "2", "1"};
  for (size_t i = 0; i < std::size(kTemplates); ++i) {
    auto t = Template::parse(kTemplates[i]);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    for (int rep = 0; rep < 3; ++rep) {
      auto r = t->render(Value::dict());
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(*r, kWant[i]);
    }
  }
}

TEST(JinjaEval, ParseOnceRenderManyWithDifferentContexts) {
  auto t = Template::parse("{% for m in messages %}{{ m }};{% endfor %}");
  ASSERT_TRUE(t.ok());
  for (int n = 0; n < 5; ++n) {
    std::vector<Value> items;
    for (int k = 0; k < n; ++k) items.emplace_back(k);
    Value ctx = Value::dict();
    ctx.as_dict()->set(Value("messages"), Value::list(items));
    auto r = t->render(ctx);
    ASSERT_TRUE(r.ok());
    std::string want;
    for (int k = 0; k < n; ++k) want += std::to_string(k) + ";";
    EXPECT_EQ(*r, want);
  }
}

TEST(JinjaEval, StrftimeNowUsesInjectedTime) {
  auto t = Template::parse("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M') }}");
  ASSERT_TRUE(t.ok());
  RenderEnv env;
  std::tm tm{};
  tm.tm_year = 124;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 9;
  tm.tm_min = 5;
  env.now = tm;
  auto r = t->render(Value::dict(), env);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, "26 Jul 2024|2024-07-26 09:05");
}

TEST(JinjaEval, KeepTrailingNewlineOption) {
  ParseOptions o;
  o.keep_trailing_newline = true;
  auto t = Template::parse("x\n", o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->render(Value::dict()), "x\n");
  auto t2 = Template::parse("x\n");
  EXPECT_EQ(*t2->render(Value::dict()), "x");
}

}  // namespace
}  // namespace geniex::jinja
