"""The geniex Python package's native API against the engine: greedy output equals `geniex run`,
streams, callbacks, cancellation, tokenizer, chat template, logits and state, on the real
Gemma 3 270M and the tiny models. scripts/test.sh imports geniex from build/release/python."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import geniex

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests/data/models"
TINY = {name: MODELS / f"tiny-{name}-q8_0.gguf"
        for name in ("llama", "mistral", "qwen2", "qwen3", "gemma3", "lfm2")}
GOLDEN = json.loads((MODELS / "gemma3_270m_greedy.json").read_text())


def cli_run(geniex_bin, model, prompt, n, *extra):
    r = subprocess.run([str(geniex_bin), "run", "-m", str(model), "--raw", "-p", prompt, "--temp",
                        "0", "-n", str(n), "-t", "2", "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def gemma(gemma_gguf):
    with geniex.load(gemma_gguf, device="cpu", n_threads=2) as m:
        yield m


def test_package_is_the_build_under_test(build_dir):
    # scripts/test.sh points PYTHONPATH at the build tree: the tests judge this build's _core.
    assert Path(geniex.__file__).resolve().parent == (build_dir / "python" / "geniex").resolve()
    assert Path(geniex._core.__file__).parent == Path(geniex.__file__).parent


@pytest.mark.parametrize("prompt", ["1, 2, 3, 4, 5,", GOLDEN["cases"][0]["prompt"]])
def test_gemma_greedy_equals_geniex_run(gemma, geniex_bin, gemma_gguf, prompt):
    ref = cli_run(geniex_bin, gemma_gguf, prompt, 48)
    # `geniex run --raw` parses special-token text (<start_of_turn>) in the prompt.
    out = gemma.generate(prompt, max_tokens=48, temperature=0, parse_special=True)
    assert out.prompt_tokens == ref["prompt_token_ids"]
    assert out.tokens == ref["token_ids"]
    assert out.text == ref["text"]
    assert out.stop_reason == ref["stop_reason"]
    assert out.timings.generated_tokens == len(out.tokens)
    assert out.timings.generation_tokens_per_second > 0


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_greedy_equals_geniex_run(geniex_bin, name):
    ref = cli_run(geniex_bin, TINY[name], "Hello world, this is", 24)
    with geniex.ModelBuilder(TINY[name]).with_device("cpu").with_threads(2).build() as m:
        cfg = geniex.GenerationConfig(max_tokens=24, temperature=0)
        out = m.generate("Hello world, this is", cfg)
        assert (out.tokens, out.text, out.stop_reason) == (ref["token_ids"], ref["text"],
                                                          ref["stop_reason"])
        # Token ids in, the same continuation out.
        again = m.generate(out.prompt_tokens, cfg)
        assert again.tokens == out.tokens


def test_stream_pieces_concatenate_to_the_result(gemma):
    prompt = "The quick brown fox"
    full = gemma.generate(prompt, max_tokens=40, temperature=0)
    stream = gemma.stream(prompt, max_tokens=40, temperature=0)
    pieces = list(stream)
    assert all(isinstance(p, geniex.Piece) for p in pieces)
    assert "".join(p.text for p in pieces) == stream.result.text == full.text
    # Each piece carries the token that completed it, in order.
    it = iter(full.tokens)
    assert all(any(p.token == t for t in it) for p in pieces)
    assert stream.result.tokens == full.tokens


def test_on_token_sees_every_piece_and_false_stops(gemma):
    seen = []

    def on_token(text, token):
        seen.append((text, token))
        return len(seen) < 3

    out = gemma.generate("Once upon a time", max_tokens=40, temperature=0, on_token=on_token)
    assert out.stop_reason == "cancelled"
    assert len(seen) == 3
    assert out.text == "".join(t for t, _ in seen)
    full = gemma.generate("Once upon a time", max_tokens=40, temperature=0)
    assert full.text.startswith(out.text) and len(full.text) > len(out.text)
    # A callback returning None (print-like) goes on.
    none = gemma.generate("Once upon a time", max_tokens=8, temperature=0,
                          on_token=lambda t, i: None)
    assert none.stop_reason == "length" and none.tokens == full.tokens[:8]


def test_cancel_token_from_another_thread_stops_decode():
    with geniex.load(TINY["llama"], device="cpu", n_threads=2) as m:
        cancel = geniex.CancelToken()
        seen = []

        def on_token(text, token):
            seen.append(text)
            if len(seen) == 5:
                threading.Thread(target=cancel.cancel).start()

        limit = m.info.n_ctx - 16
        out = m.generate("Hello world", max_tokens=limit, temperature=0, ignore_eos=True,
                         cancel=cancel, on_token=on_token)
        assert cancel.cancelled
        assert out.stop_reason == "cancelled"
        assert 5 <= len(out.tokens) < limit // 2
        assert out.text == "".join(seen)


def test_stream_cancel_stops_the_generation():
    with geniex.load(TINY["llama"], device="cpu", n_threads=2) as m:
        limit = m.info.n_ctx - 16
        stream = m.stream("Hello world", max_tokens=limit, temperature=0, ignore_eos=True)
        got = []
        for piece in stream:
            got.append(piece.text)
            if len(got) == 3:
                stream.cancel()
        assert stream.result.stop_reason == "cancelled"
        assert len(stream.result.tokens) < limit // 2
        assert "".join(got) == stream.result.text
        # The model goes on serving.
        assert m.generate("Hello world", max_tokens=4, temperature=0).stop_reason == "length"


def test_callback_exception_propagates_and_the_model_stays_usable(gemma):
    solo = gemma.generate("The capital of France is", max_tokens=12, temperature=0)

    class Boom(Exception):
        pass

    calls = []

    def on_token(text, token):
        calls.append(text)
        if len(calls) == 2:
            raise Boom("stop here")

    with pytest.raises(Boom, match="stop here"):
        gemma.generate("The capital of France is", max_tokens=200, temperature=0,
                       on_token=on_token)
    assert len(calls) == 2
    again = gemma.generate("The capital of France is", max_tokens=12, temperature=0)
    assert again.tokens == solo.tokens and again.text == solo.text


def test_chat_and_template(gemma, geniex_bin, gemma_gguf):
    msgs = [{"role": "user", "content": "Name three colors."}]
    text = gemma.apply_chat_template(msgs)
    assert "Name three colors." in text and text.rstrip().endswith("model")
    ids = gemma.chat_tokens(msgs)
    assert ids == gemma.tokenize(text, add_special=not text.startswith("<bos>"),
                                 parse_special=True)
    out = gemma.chat(msgs, max_tokens=16, temperature=0)
    # The chat is the raw generation from the template's tokens.
    raw = gemma.generate(ids, max_tokens=16, temperature=0)
    assert out.tokens == raw.tokens and out.text == raw.text
    # Content parts (Hugging Face's list form) render the same text.
    parts = [{"role": "user", "content": [{"type": "text", "text": "Name three colors."}]}]
    assert gemma.chat(parts, max_tokens=16, temperature=0).tokens == out.tokens
    # stream() takes messages too.
    assert "".join(p.text for p in gemma.stream(msgs, max_tokens=16, temperature=0)) == out.text


def test_json_schema_structured_output(gemma):
    schema = {"type": "object",
              "properties": {"color": {"enum": ["red", "green", "blue"]},
                             "count": {"type": "integer", "minimum": 1, "maximum": 3}},
              "required": ["color", "count"], "additionalProperties": False}
    msgs = [{"role": "user", "content": "Name a color and a small number."}]
    out = gemma.chat(msgs, max_tokens=64, temperature=0, json_schema=json.dumps(schema))
    assert out.stop_reason == "eog", out.text
    value = json.loads(out.text)
    assert set(value) == {"color", "count"}
    assert value["color"] in ("red", "green", "blue") and 1 <= value["count"] <= 3
    with pytest.raises(geniex.InvalidArgument, match="'pattern'"):
        gemma.generate("x", max_tokens=2, json_schema='{"type": "string", "pattern": "a"}')
    assert gemma.generate("x", max_tokens=2, temperature=0).text is not None  # still usable


def test_tokenize_detokenize_roundtrip(gemma, geniex_bin, gemma_gguf):
    text = "Café, naïve, 東京, 🚀! def f(x): return x**2"
    ids = gemma.tokenize(text)
    r = subprocess.run([str(geniex_bin), "tokenize", "-m", str(gemma_gguf), "--add-special",
                        "--json", text], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert ids == json.loads(r.stdout)["ids"]
    assert ids[0] == gemma.info.bos_token
    assert gemma.detokenize(ids[1:]) == text
    assert gemma.detokenize(np.array(ids[1:], dtype=np.int64)) == text
    assert gemma.tokenize("<start_of_turn>", add_special=False, parse_special=True) == \
        [gemma.tokenize("<start_of_turn>", add_special=False, parse_special=True)[0]]


def test_logits_are_float32_rows_with_the_greedy_argmax(gemma):
    prompt = gemma.tokenize("The capital of France is")
    logits = gemma.logits(prompt)
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    assert logits.shape == (len(prompt), gemma.info.n_vocab)
    nxt = gemma.generate(prompt, max_tokens=1, temperature=0).tokens[0]
    assert int(np.argmax(logits[-1])) == nxt
    tail = gemma.logits(prompt, first_row=len(prompt) - 1)
    assert tail.shape == (1, gemma.info.n_vocab)
    np.testing.assert_allclose(tail[0], logits[-1], rtol=0, atol=1e-3)


def test_save_and_load_state(tmp_path):
    path = tmp_path / "state.bin"
    with geniex.load(TINY["llama"], device="cpu", n_threads=2) as a:
        first = a.generate("Hello world, once more", max_tokens=8, temperature=0)
        a.save_state(path)
        cached = a.cached_tokens()
    assert path.stat().st_size > 0
    with geniex.load(TINY["llama"], device="cpu", n_threads=2) as b:
        b.load_state(str(path))
        assert b.cached_tokens() == cached
        again = b.generate("Hello world, once more", max_tokens=8, temperature=0)
        assert again.tokens == first.tokens
        assert again.timings.cached_tokens > 0


def test_info_stats_and_close():
    m = geniex.ModelBuilder(TINY["qwen2"]).with_device(geniex.Device.cpu()).with_threads(
        2).with_context_size(256).build()
    info = m.info
    assert info.architecture == "qwen2" and info.n_ctx == 256 and info.n_threads == 2
    assert Path(info.path) == TINY["qwen2"]
    m.generate("Hi", max_tokens=2, temperature=0)
    assert m.engine_stats().steps > 0 and m.kv_stats().bytes_per_token > 0
    assert "cpu" in m.explain_placement()
    m.close()
    assert m.closed
    with pytest.raises(ValueError, match="closed"):
        m.generate("Hi")


def test_offload_layers_splits_the_model_as_the_cli_does(build_dir, geniex_bin):
    """offload_layers=1 on the reference NPU: the tiny llama's last layer and head there, the
    embedding and layers 0-1 on the CPU; the same tokens as `geniex run --offload-layers 1`."""
    plugins = build_dir / "plugins"
    with geniex.load(TINY["llama"], device="npu", offload_layers=1, plugin_dir=plugins,
                     n_threads=2, n_ctx=256) as m:
        ex = m.explain_placement()
        assert "  embedding .. layer 1 -> cpu(" in ex, ex
        assert "  layer 2 .. output -> npu(ref: reference NPU (host, int8))" in ex, ex
        assert "note: embedding, layer 0 .. layer 1 on the CPU: --offload-layers 1" in ex, ex
        out = m.generate("Hello world, this is", max_tokens=8, temperature=0)
    ref = cli_run(geniex_bin, TINY["llama"], "Hello world, this is", 8, "--device", "npu",
                  "--offload-layers", "1")
    assert out.tokens == ref["token_ids"]
    with pytest.raises(geniex.InvalidArgument, match="offload layers must be >= 0"):
        geniex.load(TINY["llama"], offload_layers=-2)


def test_generation_config_fields_and_overrides():
    c = geniex.GenerationConfig(max_tokens=5, temperature=0, stop=["\n"], seed=7)
    assert (c.max_tokens, c.temperature, c.stop, c.seed) == (5, 0.0, ["\n"], 7)
    d = geniex.GenerationConfig()
    assert (d.max_tokens, d.top_k, d.seed) == (256, 40, None)
    with pytest.raises(TypeError, match="no_such_field"):
        geniex.GenerationConfig(no_such_field=1)
    with geniex.load(TINY["llama"], device="cpu", n_threads=2) as m:
        with pytest.raises(TypeError, match="bogus"):
            m.generate("Hi", bogus=3)
        # Sampling with a seed repeats; overrides win over the config.
        a = m.generate("Hello", geniex.GenerationConfig(max_tokens=50), max_tokens=8, seed=3)
        b = m.generate("Hello", max_tokens=8, seed=3, temperature=0.8)
        assert len(a.tokens) <= 8 and a.tokens == b.tokens and a.seed == 3


def test_committed_type_stub_matches_the_module(tmp_path):
    # bindings/python/geniex/_core.pyi is what nanobind's stubgen writes for this build, so IDEs
    # and type checkers see the real signatures (regenerate it with the command below).
    out = tmp_path / "_core.pyi"
    r = subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-m", "geniex._core", "-o",
                        str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    committed = REPO / "bindings/python/geniex/_core.pyi"
    assert out.read_text() == committed.read_text(), (
        "stale stub: PYTHONPATH=build/release/python .venv/bin/python -m nanobind.stubgen "
        "-m geniex._core -o bindings/python/geniex/_core.pyi")
    assert (Path(geniex.__file__).parent / "py.typed").exists()
