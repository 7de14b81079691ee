#!/usr/bin/env python3
"""Writes conversations.json: the chat-template test matrix (every template x every conversation).

Each conversation is rendered with every template; combinations a template rejects (it calls
raise_exception, or jinja2 fails) are kept and recorded as expected errors by make_goldens.py.

Usage: python3 make_conversations.py   (writes conversations.json next to this file)
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# Template name -> file and the special tokens transformers would pass for that model.
TEMPLATES = {
    "gemma3": {"file": "gemma3.jinja", "bos_token": "<bos>", "eos_token": "<end_of_turn>"},
    "llama3": {"file": "llama3.jinja", "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"},
    "llama3.1": {"file": "llama3.1.jinja", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.2": {"file": "llama3.2.jinja", "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "mistral-v0.3": {"file": "mistral-v0.3.jinja", "bos_token": "<s>", "eos_token": "</s>"},
    "mistral-nemo": {"file": "mistral-nemo.jinja", "bos_token": "<s>", "eos_token": "</s>"},
    "qwen2.5": {"file": "qwen2.5.jinja", "bos_token": "", "eos_token": "<|im_end|>"},
    "qwen3": {"file": "qwen3.jinja", "bos_token": "", "eos_token": "<|im_end|>"},
    "lfm2": {"file": "lfm2.jinja", "bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"},
    "lfm2.5": {"file": "lfm2.5.jinja", "bos_token": "<|startoftext|>", "eos_token": "<|im_end|>"},
}

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Suche im Web — 検索 \"quoted\" & <b>tags</b>",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer", "default": 5, "minimum": 1},
                "filters": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            },
            "required": ["query"],
        },
        "return": {"type": "array"},
    },
}
TOOLS = [WEATHER, SEARCH]


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


def s(text):
    return {"role": "system", "content": text}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def tool(cid, content):
    return {"role": "tool", "tool_call_id": cid, "content": content}


CONVERSATIONS = [
    ("single_user", [u("Hello!")], None, True, {}),
    ("single_user_nogen", [u("Hello!")], None, False, {}),
    ("system_user", [s("You are a helpful assistant."), u("What is 2+2?")], None, True, {}),
    ("system_user_assistant_user",
     [s("Be brief."), u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")], None, True, {}),
    ("multi_turn", [u("One"), a("Two"), u("Three"), a("Four"), u("Five")], None, True, {}),
    ("ends_with_assistant", [u("Ping"), a("Pong")], None, False, {}),
    ("ends_with_assistant_gen", [u("Ping"), a("Pong")], None, True, {}),
    ("whitespace_padding", [s("  sys with spaces  \n"), u("\n\n  padded question \t\n"), a("  padded answer  "),
                            u("next")], None, True, {}),
    ("unicode_cjk", [s("你是一个乐于助人的助手。"), u("東京の天気は？"), a("晴れです。"), u("한국어로 대답해 주세요")], None, True, {}),
    ("unicode_emoji", [u("Tell me about 🚀 and 👩‍👩‍👧‍👦!"), a("🚀 = rocket 🎉"), u("More 🤖?")], None, True, {}),
    ("unicode_rtl", [s("أنت مساعد مفيد"), u("שלום, מה שלומך?"), a("مرحبا! \u200fأنا بخير"), u("Mixed עברית and English")],
     None, True, {}),
    ("unicode_whitespace", [u("\u3000ideographic space\u3000"), a("\u00a0nbsp around\u00a0"), u("zero\u200bwidth\u2028sep")],
     None, True, {}),
    ("quotes_and_braces", [u("It's a \"test\" with \\backslash\\ and {{ braces }} {% tag %} {# c #}"), a("ok 'single'"),
                           u("end")], None, True, {}),
    ("empty_user", [u("")], None, True, {}),
    ("markdown_code", [s("Answer in markdown.\nUse code blocks."),
                       u("Write hello world in Python.\n\n```python\n# here\n```"),
                       a("```python\nprint(\"hello world\")\n```\n\n- item 1\n- item 2"), u("Thanks!")], None, True, {}),
    ("content_parts_text", [{"role": "user", "content": [{"type": "text", "text": "Part one. "},
                                                          {"type": "text", "text": "Part two."}]}], None, True, {}),
    ("content_parts_image", [{"role": "user", "content": [{"type": "image"},
                                                           {"type": "text", "text": "What is in this image?"}]}],
     None, True, {}),
    ("system_parts", [{"role": "system", "content": [{"type": "text", "text": "System as parts."}]}, u("Hi")],
     None, True, {}),
    ("assistant_think", [u("Why?"), a("<think>\nLet me reason.\n</think>\n\nBecause."), u("And then?")], None, True, {}),
    ("assistant_think_last", [u("Why?"), a("<think>\nreasoning here\n</think>\n\nFinal answer.")], None, False, {}),
    ("reasoning_content", [u("Q1"), {"role": "assistant", "content": "A1", "reasoning_content": "thinking about Q1"},
                           u("Q2")], None, True, {}),
    ("tools_single_user", [u("What's the weather in Paris?")], TOOLS, True, {}),
    ("tools_system_user", [s("You can call tools."), u("Weather in Berlin?")], TOOLS, True, {}),
    ("tool_call_flow",
     [u("What's the weather in Paris?"),
      {"role": "assistant", "content": "", "tool_calls": [call("abc123XYZ", "get_weather", {"location": "Paris"})]},
      tool("abc123XYZ", "{\"temperature\": 21, \"unit\": \"celsius\"}"),
      a("It is 21°C in Paris.")], [WEATHER], False, {}),
    ("tool_call_flow_gen",
     [s("Use tools when needed."), u("Weather in Tokyo, in fahrenheit?"),
      {"role": "assistant", "content": "",
       "tool_calls": [call("tok999ABC", "get_weather", {"location": "Tokyo", "unit": "fahrenheit"})]},
      tool("tok999ABC", "72")], [WEATHER], True, {}),
    ("parallel_tool_calls",
     [u("Weather in Paris and Rome?"),
      {"role": "assistant", "content": "",
       "tool_calls": [call("par111AAA", "get_weather", {"location": "Paris"}),
                      call("rom222BBB", "get_weather", {"location": "Rome"})]},
      tool("par111AAA", "sunny"), tool("rom222BBB", "rainy")], [WEATHER], True, {}),
    ("tool_call_with_content",
     [u("Search for cats"),
      {"role": "assistant", "content": "Let me search.",
       "tool_calls": [call("sea333CCC", "search", {"query": "cats", "max_results": 3})]},
      tool("sea333CCC", "Cats are great."), a("Cats are great.")], TOOLS, True, {}),
    ("tool_args_unicode",
     [u("Search 日本語 please"),
      {"role": "assistant", "content": "",
       "tool_calls": [call("uni444DDD", "search",
                           {"query": "日本語 \"quoted\" back\\slash\nnewline 🚀", "filters": [{"k": "é"}]})]},
      tool("uni444DDD", "結果: なし")], TOOLS, True, {}),
    ("tool_call_content_none",
     [u("Weather?"),
      {"role": "assistant", "content": None, "tool_calls": [call("non555EEE", "get_weather", {"location": "Oslo"})]},
      tool("non555EEE", "cold")], [WEATHER], True, {}),
    ("tools_multi_turn_no_calls", [u("Hi"), a("Hello"), u("Any tools?")], TOOLS, True, {}),
    ("tool_args_numbers",
     [u("Numbers"),
      {"role": "assistant", "content": "",
       "tool_calls": [call("num666FFF", "search",
                           {"query": "x", "max_results": 10, "score": 0.5, "big": 1e20, "neg": -3, "flag": True,
                            "none": None, "nested": {"a": [1, 2.25, {"b": False}]}})]},
      tool("num666FFF", "done")], TOOLS, True, {}),
    ("non_alternating", [u("First"), u("Second")], None, True, {}),
    ("starts_with_assistant", [a("I start."), u("ok")], None, True, {}),
    ("system_only", [s("Only a system prompt.")], None, True, {}),
    ("enable_thinking_false", [u("Quick question")], None, True, {"enable_thinking": False}),
    ("date_string_extra", [u("What day is it?")], TOOLS, True, {"date_string": "01 Feb 2025"}),
    ("tools_in_system_prompt", [s("sys"), u("Weather in Lima?")], [WEATHER], True, {"tools_in_user_message": False}),
    ("html_chars", [u("<script>alert('x')</script> & &amp; <b>bold</b>"), a("<ok> & done"), u("<end>")], None, True, {}),
    ("multiline_system", [s("Line 1\nLine 2\n\nLine 4"), u("Hello\nworld"), a("Hi\nthere"), u("Bye")], None, True, {}),
    ("tool_role_without_tools", [u("Call it"), {"role": "assistant", "content": "",
                                                 "tool_calls": [call("xyz777GGG", "get_weather", {"location": "Nice"})]},
                                 tool("xyz777GGG", "warm"), a("It is warm.")], None, True, {}),
    ("bad_tool_call_id", [u("Weather?"), {"role": "assistant", "content": "",
                                          "tool_calls": [call("short", "get_weather", {"location": "Rome"})]},
                          tool("short", "hot")], [WEATHER], True, {}),
    ("preserve_thinking", [u("Q"), {"role": "assistant", "content": "A", "thinking": "I thought"}, u("Q2")], None, True,
     {"preserve_thinking": True}),
    ("long_conversation", [s("Count with me.")] + [m for i in range(12) for m in (u(f"Number {i}"), a(f"{i + 1}"))],
     None, True, {}),
]


def main():
    cases = []
    for cid, messages, tools, gen, extra in CONVERSATIONS:
        cases.append({"id": cid, "messages": messages, "tools": tools, "add_generation_prompt": gen, "extra": extra})
    out = {
        "comment": "Generated by make_conversations.py; every template is rendered with every conversation.",
        "now": "2025-01-15T10:30:00",
        "templates": TEMPLATES,
        "conversations": cases,
    }
    with open(os.path.join(HERE, "conversations.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} conversations x {len(TEMPLATES)} templates")


if __name__ == "__main__":
    main()
