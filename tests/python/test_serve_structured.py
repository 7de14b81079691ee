"""Structured outputs (response_format json_schema) through `geniex serve` on the real Gemma 3
270M, judged by outside code: the official openai client sends the request, `jsonschema` (not
ours) validates the reply, LangChain's with_structured_output returns a valid Pydantic object.
A 270M model rarely writes schema-valid JSON by itself: every reply below validates only because
sampling is constrained."""
from __future__ import annotations

import json
from typing import Literal, Optional

import jsonschema
import openai
import pydantic
from langchain_openai import ChatOpenAI

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"enum": ["Paris", "Tokyo", "Lima"]},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3},
        "email": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 30}]},
    },
    "required": ["name", "age", "city", "hobbies", "email"],
    "additionalProperties": False,
}


def client(srv):
    return openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)


def response_format(schema, name="person"):
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def test_strict_json_schema_reply_validates(gemma_server):
    for temperature, seed in ((0.0, None), (1.0, 7), (1.0, 8)):
        r = client(gemma_server).chat.completions.create(
            model=gemma_server.model_id, temperature=temperature, seed=seed, max_tokens=200,
            messages=[{"role": "user", "content": "Invent a person and describe them as JSON."}],
            response_format=response_format(PERSON))
        choice = r.choices[0]
        assert choice.finish_reason == "stop", choice
        value = json.loads(choice.message.content)
        jsonschema.validate(value, PERSON)


def test_streamed_json_schema_reply_validates(gemma_server):
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 9},
              "minItems": 2, "maxItems": 4}
    stream = client(gemma_server).chat.completions.create(
        model=gemma_server.model_id, temperature=0, max_tokens=60, stream=True,
        messages=[{"role": "user", "content": "Give me some small numbers."}],
        response_format=response_format(schema, "numbers"))
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    jsonschema.validate(json.loads(text), schema)


def test_unsupported_schema_is_a_400_naming_the_keyword_and_the_server_goes_on(gemma_server):
    c = client(gemma_server)
    bad = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}
    try:
        c.chat.completions.create(model=gemma_server.model_id, max_tokens=5,
                                  messages=[{"role": "user", "content": "Hi"}],
                                  response_format=response_format(bad))
        raise AssertionError("expected a 400")
    except openai.BadRequestError as e:
        assert e.status_code == 400
        assert e.body["param"] == "response_format.json_schema.schema"
        assert "'pattern'" in e.body["message"]
    r = c.chat.completions.create(model=gemma_server.model_id, max_tokens=4,
                                  messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].message.content is not None


class Pet(pydantic.BaseModel):
    kind: Literal["cat", "dog", "bird"]
    name: str = pydantic.Field(max_length=12)
    age: int = pydantic.Field(ge=0, le=30)
    nickname: Optional[str] = None


class Household(pydantic.BaseModel):
    pets: list[Pet] = pydantic.Field(max_length=2)
    city: str = pydantic.Field(max_length=16)


def test_langchain_with_structured_output_returns_a_valid_object(gemma_server):
    llm = ChatOpenAI(base_url=gemma_server.base_url, api_key="unused", model=gemma_server.model_id,
                     max_retries=0, temperature=0, max_tokens=200)
    out = llm.with_structured_output(Household, method="json_schema", strict=True).invoke(
        "Describe a household with pets.")
    assert isinstance(out, Household)  # pydantic validated it ($defs + $ref, anyOf null)
    jsonschema.validate(out.model_dump(), Household.model_json_schema())
