"""`geniex convert` (issue 33) against llama.cpp's converter, judged by the `gguf` package.

tests/data/hf/<arch>/ are tiny random Hugging Face checkpoints (scripts/goldens/make_tiny_hf_dirs.py
checks that llama.cpp's conversion of tests/data/hf/llama is the committed tiny-llama-f32.gguf);
tests/data/hf/convert_goldens.json records llama.cpp's conversion of each at every --outtype
(scripts/goldens/make_convert_goldens.py). Ours must have the same metadata keys in the same order
with the same types and values, and the same tensor names, types, shapes and bytes. No key is
exempt today: general.name ("Llama", from the directory name) and general.size_label match too.
Our Q8_0 conversion then scores a text in our engine exactly as the committed llama.cpp file does.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HF = REPO / "tests/data/hf"
GOLDENS = json.loads((HF / "convert_goldens.json").read_text())
CASES = [(arch, t) for arch, m in GOLDENS["models"].items() for t in m["outtypes"]]

sys.path.insert(0, str(REPO / "scripts/goldens"))
from make_convert_goldens import describe, split_safetensors  # noqa: E402  (the goldens' own code)


def convert(geniex_bin, src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(geniex_bin), "convert", str(src), "-o", str(out), *extra],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("arch,outtype", CASES)
def test_convert_matches_llama_cpp(geniex_bin, tmp_path, arch, outtype):
    out = tmp_path / f"{arch}-{outtype}.gguf"
    r = convert(geniex_bin, HF / arch, out, "--outtype", outtype)
    assert r.returncode == 0, r.stderr
    ours = describe(out)
    want = GOLDENS["models"][arch]["outtypes"][outtype]
    assert [m["key"] for m in ours["metadata"]] == [m["key"] for m in want["metadata"]]
    for a, b in zip(ours["metadata"], want["metadata"]):
        assert a == b, f"{a['key']}: ours {a} vs llama.cpp {b}"
    assert [t["name"] for t in ours["tensors"]] == [t["name"] for t in want["tensors"]]
    for a, b in zip(ours["tensors"], want["tensors"]):
        assert a == b, f"{a['name']}: ours {a} vs llama.cpp {b}"


MM_CASES = [(arch, t) for arch, m in GOLDENS["mmproj"].items() for t in m]


@pytest.mark.parametrize("arch,outtype", MM_CASES)
def test_mmproj_matches_llama_cpp(geniex_bin, tmp_path, arch, outtype):
    """--mmproj: the vision projector file equals llama.cpp's `--mmproj` conversion (metadata
    in order, tensor names, types, shapes, bytes); the text file is written too."""
    out, mm = tmp_path / "text.gguf", tmp_path / "mmproj.gguf"
    r = convert(geniex_bin, HF / arch, out, "--outtype", outtype, "--mmproj", str(mm))
    assert r.returncode == 0, r.stderr
    assert describe(mm) == GOLDENS["mmproj"][arch][outtype]
    assert describe(out) == GOLDENS["models"][arch]["outtypes"][outtype]


def test_mmproj_of_a_text_model_is_an_error(geniex_bin, tmp_path):
    out, mm = tmp_path / "text.gguf", tmp_path / "mmproj.gguf"
    r = convert(geniex_bin, HF / "llama", out, "--mmproj", str(mm))
    assert r.returncode == 1 and "LlamaForCausalLM" in r.stderr, r.stderr
    assert not out.exists() and not mm.exists()


@pytest.mark.parametrize("arch", sorted(a for a in GOLDENS["models"] if a != "lfm2vl"))
@pytest.mark.parametrize("outtype", ["f32", "f16", "q8_0"])
def test_conversion_is_the_committed_file(geniex_bin, tmp_path, arch, outtype):
    """The engine's tiny-model goldens (tests/data/models/tiny-<arch>-<type>.gguf, llama.cpp's
    conversions of these checkpoints) are reproduced byte for byte."""
    out = tmp_path / f"{arch}.gguf"
    r = convert(geniex_bin, HF / arch, out, "--outtype", outtype)
    assert r.returncode == 0, r.stderr
    ref = REPO / f"tests/data/models/tiny-{arch}-{outtype}.gguf"
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(ref.read_bytes()).digest()


def test_converted_model_runs_with_the_same_logits(geniex_bin, tmp_path):
    """Our Q8_0 conversion loads in our engine and scores a text exactly as the committed
    llama.cpp Q8_0 file does (same per-chunk perplexities, bit for bit)."""
    ours = tmp_path / "llama-q8_0.gguf"
    assert convert(geniex_bin, HF / "llama", ours, "--outtype", "q8_0").returncode == 0
    text = tmp_path / "t.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. In 1888, Sherlock Holmes lived "
                    "at 221B Baker Street, London. " * 4)
    scores = []
    for model in (ours, REPO / "tests/data/models/tiny-llama-q8_0.gguf"):
        p = subprocess.run([str(geniex_bin), "perplexity", "-m", str(model), "-f", str(text), "-c", "32",
                            "-t", "1", "--kv-type", "f32", "--json"],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        d = json.loads(p.stdout)
        scores.append((d["tokens"], d["positions"], d["ppl"], d["chunks"]))
    assert scores[0][1] > 0
    assert scores[0] == scores[1]


def test_errors_name_what_is_missing(geniex_bin, tmp_path):
    out = tmp_path / "o.gguf"
    r = convert(geniex_bin, tmp_path, out)
    assert r.returncode == 1 and "config.json" in r.stderr, r.stderr
    (tmp_path / "config.json").write_text('{"architectures": ["FancyNetForCausalLM"]}')
    r = convert(geniex_bin, tmp_path, out)
    assert r.returncode == 1 and "FancyNetForCausalLM" in r.stderr, r.stderr
    src = tmp_path / "src"
    src.mkdir()
    for f in (HF / "llama").iterdir():
        if f.name != "tokenizer.json":
            (src / f.name).write_bytes(f.read_bytes())
    r = convert(geniex_bin, src, out)
    assert r.returncode == 1 and "tokenizer.json" in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.glob("o.gguf*"))
    r = convert(geniex_bin, HF / "llama", out, "--outtype", "q4_0")
    assert r.returncode == 2 and "q4_0" in r.stderr, r.stderr


def test_truncated_weights_leave_nothing_behind(geniex_bin, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for f in (HF / "llama").iterdir():
        data = f.read_bytes()
        (src / f.name).write_bytes(data[: len(data) // 2] if f.name == "model.safetensors" else data)
    out = tmp_path / "o.gguf"
    out.write_bytes(b"previous")
    r = convert(geniex_bin, src, out)
    assert r.returncode == 1 and "model.safetensors" in r.stderr, r.stderr
    assert out.read_bytes() == b"previous"  # an existing file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.gguf", "src"]


def test_sharded_checkpoint_matches_llama_cpp(geniex_bin, tmp_path):
    """The tiny llama split into three shards + model.safetensors.index.json (round-robin, so
    every shard mixes layers): the same file as llama.cpp's converter makes of it (tensor order
    follows the shards), and the same tensors as the single-file conversion."""
    src_named = tmp_path / "llama"  # the directory name gives general.name
    src_named.mkdir()
    split_safetensors(HF / "llama", src_named, 3)
    three = tmp_path / "three.gguf"
    r = convert(geniex_bin, src_named, three, "--outtype", "q8_0")
    assert r.returncode == 0, r.stderr
    assert describe(three) == GOLDENS["sharded"]["llama-3-shards-q8_0"]
    one = tmp_path / "one.gguf"
    assert convert(geniex_bin, HF / "llama", one, "--outtype", "q8_0").returncode == 0
    a, b = describe(one), describe(three)
    assert a["metadata"] == b["metadata"]
    assert sorted(a["tensors"], key=lambda t: t["name"]) == sorted(b["tensors"], key=lambda t: t["name"])
    # a shard missing from the directory is named
    (src_named / "model-00002-of-00003.safetensors").unlink()
    r = convert(geniex_bin, src_named, tmp_path / "x.gguf")
    assert r.returncode == 1 and "model-00002-of-00003.safetensors" in r.stderr, r.stderr


def test_lfm2vl_pair_is_the_committed_files(geniex_bin, tmp_path):
    """The engine's LFM2-VL goldens (tiny-lfm2vl-f32.gguf + mmproj-tiny-lfm2vl-f32.gguf, made by
    llama.cpp from this checkpoint) are reproduced byte for byte."""
    out, mm = tmp_path / "text.gguf", tmp_path / "mmproj.gguf"
    r = convert(geniex_bin, HF / "lfm2vl", out, "--outtype", "f32", "--mmproj", str(mm))
    assert r.returncode == 0, r.stderr
    models = REPO / "tests/data/models"
    assert out.read_bytes() == (models / "tiny-lfm2vl-f32.gguf").read_bytes()
    assert mm.read_bytes() == (models / "mmproj-tiny-lfm2vl-f32.gguf").read_bytes()
