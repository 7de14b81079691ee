"""LangChain's ChatOpenAI against `geniex serve` on the real Gemma 3 270M: invoke and stream."""
from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI


def chat_model(srv, **kw):
    return ChatOpenAI(base_url=srv.base_url, api_key="unused", model=srv.model_id, max_retries=0,
                      temperature=0, max_tokens=16, **kw)


def test_invoke_and_stream_agree(gemma_server):
    llm = chat_model(gemma_server)
    msgs = [SystemMessage(content="You are terse."), HumanMessage(content="Name a fruit.")]
    out = llm.invoke(msgs)
    assert isinstance(out.content, str) and out.content
    usage = out.usage_metadata
    assert usage["output_tokens"] <= 16 and usage["input_tokens"] > 5
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert out.response_metadata["finish_reason"] in ("stop", "length")
    chunks = list(llm.stream(msgs))
    assert len(chunks) > 2
    assert "".join(c.content for c in chunks) == out.content


def test_stream_usage_and_stop(gemma_server):
    llm = chat_model(gemma_server, stream_usage=True)
    full = None
    for c in llm.stream("Count: 1, 2, 3,"):
        full = c if full is None else full + c
    assert full.usage_metadata and full.usage_metadata["output_tokens"] > 0
    text = full.content
    stop = text[2:5]
    if stop.strip():
        cut = chat_model(gemma_server).invoke("Count: 1, 2, 3,", stop=[stop])
        assert cut.content == text[:text.find(stop)]
