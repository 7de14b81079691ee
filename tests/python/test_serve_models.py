"""Several models behind one `geniex serve` (repeated -m, --model-dir): /v1/models lists them,
each loads on its first request, --max-loaded unloads the least recently used idle one, an
unknown model is a 404 in OpenAI's shape (the official openai client raises NotFoundError), and
the reply names the model that answered."""
from __future__ import annotations

import pathlib
import shutil

import openai
import pytest
import requests

from conftest import start_server

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests/data/models"


@pytest.fixture(scope="module")
def multi(geniex_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    for name in ("tiny-qwen3-f32", "tiny-mistral-f32", "tiny-lfm2-f32"):
        shutil.copy(MODELS / f"{name}.gguf", d / f"{name}.gguf")
    (d / "mmproj-tiny-lfm2vl-f32.gguf").write_bytes(b"not a model")  # encoders are not listed
    (d / "notes.txt").write_text("not a model")
    srv = start_server(geniex_bin, MODELS / "tiny-llama-f32.gguf", "--model-dir", d,
                       "--max-loaded", "2", "-c", "256")
    yield srv
    assert srv.stop() == 0


def states(srv):
    r = requests.get(srv.url + "/v1/models", timeout=30)
    assert r.status_code == 200
    return {m["id"]: m["loaded"] for m in r.json()["data"]}


def test_models_are_listed_and_load_on_first_request(multi):
    c = openai.OpenAI(base_url=multi.base_url, api_key="x", max_retries=0)
    assert [m.id for m in c.models.list().data] == [
        "tiny-llama-f32", "tiny-lfm2-f32", "tiny-mistral-f32", "tiny-qwen3-f32"]
    assert states(multi) == {"tiny-llama-f32": True, "tiny-lfm2-f32": False,
                             "tiny-mistral-f32": False, "tiny-qwen3-f32": False}
    r = c.completions.create(model="tiny-qwen3-f32", prompt="Hello", max_tokens=4, temperature=0)
    assert r.model == "tiny-qwen3-f32"
    assert r.usage.completion_tokens == 4
    assert states(multi)["tiny-qwen3-f32"] is True
    # No model named: the default (the first -m).
    plain = requests.post(multi.url + "/v1/completions", timeout=60,
                          json={"prompt": "Hello", "max_tokens": 2}).json()
    assert plain["model"] == "tiny-llama-f32"
    # The same prompt on two models: each answers with its own vocabulary and weights.
    a = c.completions.create(model="tiny-mistral-f32", prompt="Hello", max_tokens=4,
                             temperature=0, logprobs=1)
    assert a.model == "tiny-mistral-f32"
    # --max-loaded 2: the default stays, the least recently used idle one (qwen3) went.
    loaded = states(multi)
    assert loaded["tiny-llama-f32"] and loaded["tiny-mistral-f32"]
    assert not loaded["tiny-qwen3-f32"]
    assert sum(loaded.values()) == 2
    # Asked again, it loads again.
    again = c.completions.create(model="tiny-qwen3-f32", prompt="Hello", max_tokens=4,
                                 temperature=0)
    assert again.choices[0].text == r.choices[0].text


def test_unknown_model_is_a_404_and_the_server_goes_on(multi):
    c = openai.OpenAI(base_url=multi.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError) as e:
        c.completions.create(model="gpt-4o", prompt="Hi", max_tokens=2)
    assert e.value.body["code"] == "model_not_found"
    assert e.value.body["param"] == "model"
    r = requests.get(multi.url + "/v1/models/gpt-4o", timeout=30)
    assert r.status_code == 404
    assert requests.get(multi.url + "/v1/models/tiny-lfm2-f32", timeout=30).json()["id"] == \
        "tiny-lfm2-f32"
    ok = c.completions.create(model="tiny-lfm2-f32", prompt="Hi", max_tokens=2)
    assert ok.model == "tiny-lfm2-f32"
    emb = c.embeddings.create(model="tiny-lfm2-f32", input=["Hi", "there"])
    assert emb.model == "tiny-lfm2-f32" and len(emb.data) == 2
    with pytest.raises(openai.NotFoundError):
        c.embeddings.create(model="nope", input="Hi")


def test_bad_model_sets_are_usage_errors(geniex_bin, tmp_path):
    import subprocess
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, words in ((["--model-dir", str(tmp_path / "nope")], "no such directory"),
                        (["--model-dir", str(empty)], "no .gguf files"),
                        (["-m", str(MODELS / "tiny-llama-f32.gguf"), "-m",
                          str(MODELS / "tiny-llama-f32.gguf"), "--mmproj",
                          str(MODELS / "mmproj-tiny-lfm2vl-f32.gguf"), "--model-dir", str(empty)],
                         "--mmproj")):
        p = subprocess.run([str(geniex_bin), "serve", "--port", "0", *args], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2, (args, p.stderr)
        assert words in p.stderr, p.stderr



def test_a_corrupt_model_file_is_a_clear_error_and_the_others_go_on(geniex_bin, tmp_path):
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\xff" * 60)
    srv = start_server(geniex_bin, MODELS / "tiny-llama-f32.gguf", "--model-dir", tmp_path,
                       "-c", "128")
    try:
        for _ in range(2):  # a failed load is tried again, and fails the same way
            r = requests.post(srv.base_url + "/completions", timeout=60,
                              json={"model": "broken", "prompt": "Hi", "max_tokens": 2})
            assert r.status_code == 500, r.text
            assert "model 'broken' failed to load" in r.json()["error"]["message"], r.text
        ok = requests.post(srv.base_url + "/completions", timeout=60,
                           json={"model": "tiny-llama-f32", "prompt": "Hi", "max_tokens": 2})
        assert ok.status_code == 200 and ok.json()["model"] == "tiny-llama-f32"
        listed = {m["id"]: m["loaded"] for m in
                  requests.get(srv.url + "/v1/models", timeout=30).json()["data"]}
        assert listed == {"tiny-llama-f32": True, "broken": False}
    finally:
        assert srv.stop() == 0
