"""geniex embed against llama.cpp's embeddings (llama-server --embedding) on the same GGUF (the tiny BERT and EmbeddingGemma
converted by llama.cpp's converter, the tiny llama / qwen3 decoders with mean, last and cls pooling, the real
Gemma 3 270M with mean pooling), -f FILE, and the CLI's errors. The vectors against transformers
are in src/engine/embed_test.cpp (embed_goldens.json)."""
from __future__ import annotations

import json
import math
import os
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest
import requests

from conftest import REPO, run

EMBED = REPO / "tests" / "data" / "embed"
MODELS = REPO / "tests" / "data" / "models"
TEXTS = ["the cat sat on the mat", "a dog runs in the park", "hello world",
         "the quick brown fox jumps over the lazy dog", "x"]


def cosine(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def ours(geniex_bin, model, texts, *flags):
    r = run([geniex_bin, "embed", "-m", model, "--json", "-t", "2", *flags, *texts], timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def llamacpp(llamacpp_bin, model, texts, pooling=None):
    """llama.cpp's embeddings of `texts` (unit length) from llama-server --embedding on the same
    GGUF (llama-embedding prints through llama.cpp's asynchronous logger, which can lose the end
    of its output at exit)."""
    port = free_port()
    cmd = [llamacpp_bin("llama-server"), "-m", model, "--embedding", "-t", "2", "-c", "512",
           "-b", "512", "-ub", "512", "-np", "1", "--host", "127.0.0.1", "--port", str(port)]
    if pooling:
        cmd += ["--pooling", pooling]
    # Its OpenMP workers spin while waiting, which costs several times over on a busy host.
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: nobody reads it while it runs
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=log,
                            text=True, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama-server exited: {log.read()[-2000:]}")
            try:
                if requests.get(url + "/health", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, "llama-server never became healthy"
            time.sleep(0.05)
        r = requests.post(url + "/v1/embeddings", json={"input": texts}, timeout=120)
        assert r.status_code == 200, r.text
        data = sorted(r.json()["data"], key=lambda d: d["index"])
        return [d["embedding"] for d in data]
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.mark.parametrize("model,pooling,bound", [
    (EMBED / "tiny-bert-f32.gguf", None, 0.9999),
    (MODELS / "tiny-llama-f32.gguf", "mean", 0.9999),
    (MODELS / "tiny-qwen3-f32.gguf", "last", 0.9999),
    (MODELS / "tiny-qwen3-f32.gguf", "cls", 0.9999),
    (EMBED / "tiny-gemma-embedding-f32.gguf", None, 0.9999),  # + dense_2, dense_3
])
def test_vs_llamacpp(geniex_bin, llamacpp_bin, model, pooling, bound):
    flags = ["--pooling", pooling] if pooling else []
    mine = ours(geniex_bin, model, TEXTS, *flags)
    theirs = llamacpp(llamacpp_bin, model, TEXTS, pooling)
    assert len(mine["data"]) == len(theirs) == len(TEXTS)
    for i, (a, b) in enumerate(zip(mine["data"], theirs)):
        assert len(a["embedding"]) == len(b)
        c = cosine(a["embedding"], b)
        assert c >= bound, f"input {i} ({TEXTS[i]!r}): cosine {c}"
    # Different texts give different vectors (the comparison above means something).
    assert cosine(mine["data"][0]["embedding"], mine["data"][2]["embedding"]) < 0.99


def test_gemma_mean_vs_llamacpp(geniex_bin, llamacpp_bin, gemma_gguf):
    texts = ["The capital of France is Paris.", "Bananas are yellow."]
    mine = ours(geniex_bin, gemma_gguf, texts, "--pooling", "mean")
    theirs = llamacpp(llamacpp_bin, gemma_gguf, texts, "mean")
    for i, (a, b) in enumerate(zip(mine["data"], theirs)):
        c = cosine(a["embedding"], b)
        # Q4_K_M weights: both sides quantize activations for their dot kernels.
        assert c >= 0.995, f"input {i}: cosine {c}"
    assert mine["pooling"] == "mean" and mine["n_dims"] == 640


def test_declared_pooling_and_output(geniex_bin):
    out = ours(geniex_bin, EMBED / "tiny-bert-f32.gguf", TEXTS[:2])
    assert out["pooling"] == "mean" and out["normalized"] is True and out["n_dims"] == 64
    assert [d["index"] for d in out["data"]] == [0, 1]
    assert [d["n_tokens"] for d in out["data"]] == [8, 8]
    assert out["prompt_tokens"] == 16
    for d in out["data"]:
        assert abs(sum(x * x for x in d["embedding"]) - 1.0) < 1e-5
    raw = ours(geniex_bin, EMBED / "tiny-bert-f32.gguf", TEXTS[:1], "--no-normalize")
    assert abs(sum(x * x for x in raw["data"][0]["embedding"]) - 1.0) > 1e-3
    cut = ours(geniex_bin, EMBED / "tiny-bert-f32.gguf", TEXTS[:1], "--dimensions", "8")
    assert len(cut["data"][0]["embedding"]) == 8


def test_file_one_text_per_line_and_plain_output(geniex_bin, tmp_path: pathlib.Path):
    f = tmp_path / "texts.txt"
    f.write_text("hello world\r\nthe cat sat on the mat\n", encoding="utf-8")
    from_file = ours(geniex_bin, EMBED / "tiny-bert-f32.gguf", [], "-f", f)
    from_args = ours(geniex_bin, EMBED / "tiny-bert-f32.gguf", ["hello world", "the cat sat on the mat"])
    assert [d["embedding"] for d in from_file["data"]] == [d["embedding"] for d in from_args["data"]]
    r = run([geniex_bin, "embed", "-m", EMBED / "tiny-bert-f32.gguf", "hello world", "x"], timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(len(line.split()) == 64 for line in lines)
    assert "2 inputs" in r.stderr


@pytest.mark.parametrize("args,code,words", [
    (["x", "--pooling", "max"], 2, "max"),
    (["", "x"], 1, "text 1 is empty"),
    (["--dimensions", "65", "x"], 1, "dimensions 65"),
    (["-c", "4", "the quick brown fox jumps over the lazy dog"], 1, "more than the context"),
])
def test_errors(geniex_bin, args, code, words):
    r = run([geniex_bin, "embed", "-m", EMBED / "tiny-bert-f32.gguf", *args], timeout=60)
    assert r.returncode == code, r.stderr
    assert words in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_encoder_does_not_generate(geniex_bin):
    r = run([geniex_bin, "run", "-m", EMBED / "tiny-bert-f32.gguf", "--raw", "-p", "hello", "-n", "4"],
            timeout=60)
    assert r.returncode == 1
    assert "only embeds" in r.stderr
