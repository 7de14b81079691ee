"""POST /v1/embeddings of `geniex serve` through the official `openai` client (float and base64,
dimensions, token arrays), LangChain's OpenAIEmbeddings feeding an in-memory vector store, and the
bad requests (OpenAI-shaped 400s, the server keeps serving). The real Gemma 3 270M serves with its
default pooling (mean: its GGUF declares none), where nearest neighbours are meaningful; the tiny
BERT encoder shows an embedding-only model behind the same server. Gemma 3 270M is a generative
model, not an embedding model: its mean-pooled states rank by shared wording, so the fixed queries
share words with their document (a question like "What is the capital of France?" ranks the
Python sentence first)."""
from __future__ import annotations

import base64
import math
import struct

import pytest
import requests
from openai import OpenAI

from conftest import REPO, run, start_server

DOCS = [
    "Paris is the capital and largest city of France.",
    "Bananas are a yellow fruit rich in potassium.",
    "The Python programming language was created by Guido van Rossum.",
    "The Great Wall of China stretches across northern China.",
]


def client(srv) -> OpenAI:
    return OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0)


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def max_diff(a, b) -> float:
    assert len(a) == len(b)
    return max(abs(float(x) - float(y)) for x, y in zip(a, b))


def test_float_base64_and_usage(gemma_server):
    c = client(gemma_server)
    r = c.embeddings.create(model=gemma_server.model_id, input=DOCS[:2], encoding_format="float")
    assert r.object == "list" and r.model == gemma_server.model_id
    assert [d.index for d in r.data] == [0, 1]
    vecs = [d.embedding for d in r.data]
    assert all(len(v) == 640 and abs(norm(v) - 1.0) < 1e-5 for v in vecs)
    singles = [c.embeddings.create(model=gemma_server.model_id, input=t, encoding_format="float")
               for t in DOCS[:2]]
    assert r.usage.prompt_tokens == sum(s.usage.prompt_tokens for s in singles) > 10
    assert r.usage.total_tokens == r.usage.prompt_tokens
    for s, v in zip(singles, vecs):  # batched == single
        assert max_diff(s.data[0].embedding, v) < 1e-5
    # Explicit base64: little-endian float32 bytes of the same vectors.
    b = c.embeddings.create(model=gemma_server.model_id, input=DOCS[:2], encoding_format="base64")
    for d, v in zip(b.data, vecs):
        raw = base64.b64decode(d.embedding)
        assert len(raw) == 4 * 640
        assert max_diff(struct.unpack("<640f", raw), v) == 0
    # Without encoding_format the client asks for base64 and decodes it itself.
    auto = c.embeddings.create(model=gemma_server.model_id, input=DOCS[:2])
    for d, v in zip(auto.data, vecs):
        assert max_diff(d.embedding, v) == 0


def test_dimensions_and_token_arrays(gemma_server, geniex_bin, gemma_gguf):
    c = client(gemma_server)
    full = c.embeddings.create(model=gemma_server.model_id, input=DOCS[0],
                               encoding_format="float").data[0].embedding
    cut = c.embeddings.create(model=gemma_server.model_id, input=DOCS[0], dimensions=64,
                              encoding_format="float").data[0].embedding
    assert len(cut) == 64 and abs(norm(cut) - 1.0) < 1e-5
    n = norm(full[:64])
    assert max_diff(cut, [x / n for x in full[:64]]) < 1e-6
    t = run([geniex_bin, "tokenize", "-m", gemma_gguf, "--add-special", DOCS[0]])
    assert t.returncode == 0, t.stderr
    ids = [int(x) for x in t.stdout.split()]
    one = c.embeddings.create(model=gemma_server.model_id, input=ids, encoding_format="float")
    assert one.usage.prompt_tokens == len(ids)
    assert max_diff(one.data[0].embedding, full) < 1e-5
    two = c.embeddings.create(model=gemma_server.model_id, input=[ids, ids[:5]],
                              encoding_format="float")
    assert len(two.data) == 2 and max_diff(two.data[0].embedding, full) < 1e-5


def test_langchain_vector_store_nearest_neighbour(gemma_server):
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import OpenAIEmbeddings

    emb = OpenAIEmbeddings(model=gemma_server.model_id, base_url=gemma_server.base_url,
                           api_key="unused", check_embedding_ctx_length=False,
                           tiktoken_enabled=False, max_retries=0)
    store = InMemoryVectorStore.from_texts(DOCS, embedding=emb)
    hits = store.similarity_search("Who created the Python programming language?", k=1)
    assert hits[0].page_content == DOCS[2]
    hits = store.similarity_search("Which fruit is yellow and rich in potassium?", k=1)
    assert hits[0].page_content == DOCS[1]
    hits = store.similarity_search("Paris is the capital of France.", k=2)
    assert hits[0].page_content == DOCS[0]
    assert len(emb.embed_query("bananas")) == 640


@pytest.mark.parametrize("body,param,code", [
    ({"input": []}, "input", "invalid_value"),
    ({"input": ""}, "input", "invalid_value"),
    ({"input": 5}, "input", "invalid_type"),
    ({"input": [1.5]}, "input[0]", "invalid_type"),
    ({"input": ["a", 3]}, "input[1]", "invalid_type"),
    ({"input": [[1, 2], []]}, "input[1]", "invalid_value"),
    ({"input": [[1, -2]]}, "input[0][1]", "invalid_type"),
    ({"input": [{"text": "a"}]}, "input[0]", "invalid_type"),
    ({}, "input", "missing_required_parameter"),
    ({"input": "a", "encoding_format": "hex"}, "encoding_format", "invalid_value"),
    ({"input": "a", "dimensions": 0}, "dimensions", "invalid_value"),
    ({"input": "a", "dimensions": 641}, "dimensions", "invalid_value"),
    ({"input": [[0, 999999999]]}, "input", "invalid_value"),
    ({"input": [[2] * 5000]}, "input", "context_length_exceeded"),
    ({"input": ["ok", "word " * 5000]}, "input[1]", "context_length_exceeded"),
])
def test_bad_requests_are_400_and_the_server_keeps_serving(gemma_server, body, param, code):
    body = {"model": gemma_server.model_id, **body}
    r = requests.post(gemma_server.base_url + "/embeddings", json=body, timeout=60)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert err["param"] == param and err["code"] == code, err
    assert err["message"]
    ok = requests.post(gemma_server.base_url + "/embeddings",
                       json={"model": gemma_server.model_id, "input": "still here"}, timeout=60)
    assert ok.status_code == 200 and len(ok.json()["data"][0]["embedding"]) == 640


def test_malformed_json_and_models_list(gemma_server):
    r = requests.post(gemma_server.base_url + "/embeddings", data="{not json", timeout=30,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    models = requests.get(gemma_server.base_url + "/models", timeout=30).json()
    assert [m["id"] for m in models["data"]] == [gemma_server.model_id]


def test_encoder_only_model_serves_embeddings(geniex_bin):
    srv = start_server(geniex_bin, REPO / "tests/data/embed/tiny-bert-f32.gguf")
    try:
        c = client(srv)
        r = c.embeddings.create(model=srv.model_id, input=["hello world", "the cat"],
                                encoding_format="float")
        assert len(r.data) == 2 and len(r.data[0].embedding) == 64
        assert r.usage.prompt_tokens == 4 + 4  # [CLS] ... [SEP]
        chat = requests.post(srv.base_url + "/chat/completions", timeout=30,
                             json={"model": srv.model_id,
                                   "messages": [{"role": "user", "content": "hi"}]})
        assert 400 <= chat.status_code < 500, chat.text
        assert "error" in chat.json()
        again = c.embeddings.create(model=srv.model_id, input="hello world", encoding_format="float")
        assert max_diff(again.data[0].embedding, r.data[0].embedding) < 1e-6
    finally:
        assert srv.stop() == 0
