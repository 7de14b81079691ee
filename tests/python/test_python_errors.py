"""The geniex Python package's errors: the engine's code and message, as a GenieXError subclass
that is also the builtin exception Python code catches (FileNotFoundError, OSError,
ValueError, ...)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import geniex

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/models/tiny-llama-q8_0.gguf"


def cli_error(geniex_bin, *args) -> str:
    r = subprocess.run([str(geniex_bin), *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    return r.stderr


def test_missing_file_is_model_not_found(geniex_bin, tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(geniex.ModelNotFound) as e:
        geniex.load(missing)
    err = e.value
    assert isinstance(err, FileNotFoundError) and isinstance(err, geniex.GenieXError)
    assert err.code == "NOT_FOUND"
    assert str(missing) in err.message and str(err) == err.message
    # The same message the CLI prints for the same file.
    assert err.message in cli_error(geniex_bin, "run", "-m", missing, "-p", "hi")


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_gguf_is_data_loss(geniex_bin, tmp_path, damage):
    bad = tmp_path / f"{damage}.gguf"
    if damage == "garbage":
        bad.write_bytes(b"GGUF" + b"\xff" * 64)
    else:
        shutil.copy(TINY, bad)
        with open(bad, "r+b") as f:
            f.truncate(TINY.stat().st_size // 2)
    with pytest.raises(geniex.DataLoss) as e:
        geniex.ModelBuilder(bad).with_device("cpu").build()
    err = e.value
    assert isinstance(err, OSError) and err.code == "DATA_LOSS"
    assert err.message and err.message in cli_error(geniex_bin, "run", "-m", bad, "-p", "hi")


@pytest.fixture(scope="module")
def tiny():
    with geniex.load(TINY, device="cpu", n_threads=2, n_ctx=64) as m:
        yield m


def test_bad_generation_settings_are_invalid_argument(tiny):
    with pytest.raises(geniex.InvalidArgument) as e:
        tiny.generate("Hello", max_tokens=-1)
    assert isinstance(e.value, ValueError) and e.value.code == "INVALID_ARGUMENT"
    assert e.value.message == "max_tokens must be >= 0, got -1"
    with pytest.raises(ValueError):
        tiny.generate("Hello", max_tokens=4, top_p=1.5)
    with pytest.raises(geniex.InvalidArgument, match="empty"):
        tiny.generate([])
    # The model stays usable after each error.
    assert tiny.generate("Hello", max_tokens=2, temperature=0).stop_reason == "length"


def test_bad_builder_settings_are_invalid_argument():
    with pytest.raises(geniex.InvalidArgument, match="tpu"):
        geniex.ModelBuilder(TINY).with_device("tpu")
    with pytest.raises(ValueError, match="q3"):
        geniex.load(TINY, kv_cache_type="q3")
    with pytest.raises(ValueError, match="context_overflow"):
        geniex.load(TINY, context_overflow="wrap")
    with pytest.raises(geniex.InvalidArgument):
        geniex.load(TINY, n_threads=-3)


def test_prompt_longer_than_the_context_is_context_full(tiny):
    with pytest.raises(geniex.ContextFull) as e:
        tiny.generate("word " * 200, max_tokens=4)
    assert isinstance(e.value, ValueError) and e.value.code == "OUT_OF_RANGE"
    assert "context holds 64" in e.value.message


def test_bad_messages_are_invalid_argument(tiny):
    with pytest.raises(geniex.InvalidArgument, match="message 0 has no 'role'"):
        tiny.apply_chat_template([{"content": "hi"}])
    with pytest.raises(geniex.InvalidArgument, match="not a string"):
        tiny.chat("hello")
    with pytest.raises(geniex.InvalidArgument, match="'text' or 'image'"):
        tiny.apply_chat_template([{"role": "user", "content": [{"type": "audio"}]}])


def test_error_classes_map_every_code():
    for code, builtin in [("INVALID_ARGUMENT", ValueError), ("NOT_FOUND", FileNotFoundError),
                          ("OUT_OF_RANGE", ValueError), ("DATA_LOSS", OSError),
                          ("UNIMPLEMENTED", NotImplementedError),
                          ("RESOURCE_EXHAUSTED", MemoryError), ("IO_ERROR", OSError),
                          ("INTERNAL", RuntimeError)]:
        err = geniex.errors.from_status(code, "why")
        assert isinstance(err, geniex.GenieXError) and isinstance(err, builtin)
        assert (err.code, err.message, str(err)) == (code, "why", "why")
