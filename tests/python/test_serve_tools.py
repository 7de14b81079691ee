"""Tool calls through `geniex serve`, judged by outside code: the official openai client and
LangChain's ChatOpenAI send the requests and read the replies, `jsonschema` checks each call's
arguments against the tool's own schema, and Python jinja2 (set up as transformers sets it up)
renders the expected prompt for a tool conversation.

Gemma 3 270M has no tool-call format of its own (the generic JSON envelope); the tiny
random-weight Qwen 3 speaks Hermes (<tool_call>...</tool_call>). Where a test needs the model to
call a tool it asks with tool_choice "required" or a named function, so it checks our machinery,
not a 270M model's judgement (issue 34)."""
from __future__ import annotations

import datetime
import json
import pathlib
import sys

import gguf
import jsonschema
import openai
import pytest
import requests
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from conftest import start_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY_QWEN3 = ROOT / "tests/data/models/tiny-qwen3-f32.gguf"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 40},
                           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"],
            "additionalProperties": False,  # every call is bounded (random weights end it too)
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 60}},
                       "required": ["query"], "additionalProperties": False},
    },
}
TOOLS = [WEATHER, SEARCH]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def client(srv):
    return openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)


def check_calls(calls):
    assert calls, "no tool calls"
    for c in calls:
        assert c.type == "function"
        assert c.id.startswith("call_") and len(c.id) == 29, c.id
        assert c.function.name in SCHEMAS
        jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])


def test_required_tool_call_round_trip(gemma_server):
    c = client(gemma_server)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = c.chat.completions.create(model=gemma_server.model_id, messages=messages, tools=TOOLS,
                                  tool_choice="required", parallel_tool_calls=False,
                                  temperature=0, max_tokens=120)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert len(choice.message.tool_calls) == 1
    check_calls(choice.message.tool_calls)
    call = choice.message.tool_calls[0]
    # The client sends the assistant turn back with the tool's result; the model answers.
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "21 degrees, sunny"})
    final = c.chat.completions.create(model=gemma_server.model_id, messages=messages, tools=TOOLS,
                                      tool_choice="none", temperature=0, max_tokens=40)
    assert final.choices[0].message.tool_calls is None
    assert final.choices[0].message.content
    # auto: the model decides; whatever it does comes back well formed.
    auto = c.chat.completions.create(model=gemma_server.model_id, messages=messages, tools=TOOLS,
                                     temperature=0, max_tokens=60)
    m = auto.choices[0]
    if m.finish_reason == "tool_calls":
        check_calls(m.message.tool_calls)
    else:
        assert isinstance(m.message.content, str) and m.message.tool_calls is None


def test_named_function_is_the_one_called(gemma_server):
    r = client(gemma_server).chat.completions.create(
        model=gemma_server.model_id, tools=TOOLS, temperature=0, max_tokens=120,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
        tool_choice={"type": "function", "function": {"name": "search"}})
    calls = r.choices[0].message.tool_calls
    check_calls(calls)
    assert {c.function.name for c in calls} == {"search"}


def test_streamed_tool_calls_and_streamed_answers(gemma_server):
    stream = client(gemma_server).chat.completions.create(
        model=gemma_server.model_id, tools=TOOLS, tool_choice="required", temperature=0,
        max_tokens=300, stream=True,
        messages=[{"role": "user", "content": "Weather in Rome and Oslo, please."}])
    calls, finish, content = {}, None, ""
    for chunk in stream:
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:  # accumulated by index, as OpenAI's own clients do
            slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            slot["id"] = tc.id or slot["id"]
            if tc.function:
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert content == ""
    assert calls and sorted(calls) == list(range(len(calls)))
    for slot in calls.values():
        assert slot["id"].startswith("call_")
        jsonschema.validate(json.loads(slot["arguments"]), SCHEMAS[slot["name"]])
    # An answer in the generic envelope streams as text, piece by piece (tool_choice "auto"
    # with a conversation whose tool result is in: the model may still call again).
    stream = client(gemma_server).chat.completions.create(
        model=gemma_server.model_id, tools=[WEATHER], temperature=0, max_tokens=48, stream=True,
        messages=[{"role": "system", "content": "Answer in one short sentence."},
                  {"role": "user", "content": "Write a greeting for a friend."}])
    pieces, finish = [], None
    for chunk in stream:
        if chunk.choices:
            d = chunk.choices[0].delta
            if d.content:
                pieces.append(d.content)
            finish = chunk.choices[0].finish_reason or finish
    if finish != "tool_calls":
        assert len(pieces) > 1, pieces  # streamed, not sent in one piece at the end
        assert not "".join(pieces).lstrip().startswith("{"), pieces  # the envelope's text only


def test_langchain_tool_agent_loop_finishes(gemma_server):
    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return f"It is 21 degrees and sunny in {city}."

    llm = ChatOpenAI(base_url=gemma_server.base_url, api_key="x", model=gemma_server.model_id,
                     temperature=0, max_tokens=120, max_retries=0)
    must_call = llm.bind_tools([get_weather], tool_choice="required", parallel_tool_calls=False)
    answer = llm.bind_tools([get_weather], tool_choice="none")
    msgs = [HumanMessage("What is the weather in Lima?")]
    ran = 0
    for step in range(4):
        ai = (must_call if step == 0 else answer).invoke(msgs)
        msgs.append(ai)
        if not ai.tool_calls:
            break
        for tc in ai.tool_calls:
            assert tc["name"] == "get_weather"
            assert isinstance(tc["args"].get("city"), str)
            msgs.append(ToolMessage(get_weather.invoke(tc["args"]), tool_call_id=tc["id"]))
            ran += 1
    assert ran == 1
    assert not msgs[-1].tool_calls and isinstance(msgs[-1].content, str) and msgs[-1].content


@pytest.mark.parametrize("body,param", [
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]},
     "tools[0].function.name"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]},
     "tools[0].function.parameters"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
     "tool_choice.function.name"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"messages": [{"role": "user", "content": "hi"},
                   {"role": "tool", "tool_call_id": "call_1", "content": "x"}]},
     "messages[1].tool_call_id"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                                         "function": {"name": "f",
                                                                      "arguments": 5}}]}]},
     "messages[0].tool_calls[0].function.arguments"),
])
def test_bad_tool_requests_are_400s_and_the_server_goes_on(gemma_server, body, param):
    req = {"model": gemma_server.model_id, "max_tokens": 4,
           "messages": [{"role": "user", "content": "Hi"}], **body}
    r = requests.post(gemma_server.url + "/v1/chat/completions", json=req, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param, err
    assert err["type"] == "invalid_request_error"
    ok = client(gemma_server).chat.completions.create(
        model=gemma_server.model_id, max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    assert ok.choices[0].message.content is not None


@pytest.fixture(scope="module")
def qwen_server(geniex_bin):
    srv = start_server(geniex_bin, TINY_QWEN3, "--parallel", "2")
    yield srv
    assert srv.stop() == 0


def transformers_render(template: str, messages, tools, bos: str, eos: str) -> str:
    """The prompt transformers' apply_chat_template makes (its jinja2 environment, as
    tests/data/chat_templates/make_goldens.py builds it), with tool-call arguments as dicts."""
    sys.path.insert(0, str(ROOT / "tests/data/chat_templates"))
    try:
        import make_goldens
    finally:
        sys.path.pop(0)
    env = make_goldens.make_env(datetime.datetime.now())
    return env.from_string(template).render(messages=messages, tools=tools, documents=None,
                                             add_generation_prompt=True, bos_token=bos,
                                             eos_token=eos)


def test_hermes_family_renders_tools_as_transformers_and_calls_natively(qwen_server):
    reader = gguf.GGUFReader(TINY_QWEN3)
    field = reader.fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode()
    args = {"city": "Paris", "unit": "celsius"}
    conv = [{"role": "system", "content": "Use tools."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_1", "type": "function",
                             "function": {"name": "get_weather", "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "21 degrees"}]
    r = requests.post(qwen_server.url + "/apply-template", timeout=60,
                      json={"messages": conv, "tools": TOOLS})
    assert r.status_code == 200, r.text
    want_msgs = json.loads(json.dumps(conv))
    want_msgs[2]["tool_calls"][0]["function"]["arguments"] = args  # transformers takes dicts
    # OpenAI clients send content null with tool calls; templates test `'</think>' in content`
    # (a TypeError on None in jinja2 too), so the server passes "" as llama-server does.
    want_msgs[2]["content"] = ""
    want = transformers_render(template, want_msgs, TOOLS, "", "<|im_end|>")
    assert r.json()["prompt"] == want
    assert "<tool_response>\n21 degrees\n</tool_response>" in want
    # required: the reply starts inside <tool_call> and is held to the call's schema (strings
    # have a maxLength, so it ends); random weights or not, the call parses and validates.
    r = requests.post(qwen_server.url + "/apply-template", timeout=60,
                      json={"messages": conv[:2], "tools": TOOLS, "tool_choice": "required"})
    assert r.json()["prompt"].endswith("<|im_start|>assistant\n<tool_call>\n")
    for seed in (1, 2):
        out = client(qwen_server).chat.completions.create(
            model=qwen_server.model_id, messages=conv[:2], tools=TOOLS, tool_choice="required",
            temperature=1.0, seed=seed, max_tokens=300)
        ch = out.choices[0]
        assert ch.finish_reason == "tool_calls", ch
        check_calls(ch.message.tool_calls)
