"""geniex imatrix against llama-imatrix (built by scripts/setup.sh from the pinned llama-cpp-python
sdist) on the tiny F32 model of each architecture: the same entries, token counts and metadata,
per-column sums within 2e-3 (relative) — llama.cpp keeps its KV cache in F16, our reference
interpreter in F32 — and each tool's quantizer takes the other's file."""
from __future__ import annotations

import gguf
import numpy as np
import pytest

from conftest import REPO, run

MODELS = REPO / "tests" / "data" / "models"
TEXT = MODELS / "ppl_text.txt"
ARCHS = ["llama", "mistral", "qwen2", "qwen3", "gemma3", "lfm2"]
TOLERANCE = 2e-3


def read(path):
    r = gguf.GGUFReader(path)
    tensors = {t.name: np.array(t.data, dtype=np.float64) for t in r.tensors}
    meta = {k: r.fields[k].parts[-1].tolist() for k in ("imatrix.chunk_count", "imatrix.chunk_size")}
    ds = r.fields["imatrix.datasets"]
    meta["datasets"] = [bytes(ds.parts[i]).decode() for i in ds.data]
    meta["general.type"] = bytes(r.fields["general.type"].parts[-1]).decode()
    return tensors, meta


@pytest.mark.parametrize("arch", ARCHS)
def test_matches_llama_imatrix(geniex_bin, llamacpp_bin, tmp_path, arch):
    model = MODELS / f"tiny-{arch}-f32.gguf"
    ours, ref = tmp_path / "ours.gguf", tmp_path / "ref.gguf"
    g = run([geniex_bin, "imatrix", "-m", model, "-f", TEXT, "-o", ours, "-c", "64", "--chunks", "2"])
    assert g.returncode == 0, g.stderr
    assert "from 2 chunks of 64 tokens" in g.stdout
    r = run([llamacpp_bin("llama-imatrix"), "-m", model, "-f", TEXT, "-o", ref, "-c", "64",
             "--chunks", "2", "-t", "2"])
    assert r.returncode == 0, r.stderr[-2000:]
    a, ma = read(ours)
    b, mb = read(ref)
    assert ma == mb
    assert sorted(a) == sorted(b)
    for name, want in b.items():
        if name.endswith(".counts"):
            assert np.array_equal(a[name], want), name
        else:
            rel = np.max(np.abs(a[name] - want) / np.maximum(np.abs(want), 1e-30))
            assert rel < TOLERANCE, f"{name}: {rel}"


def test_quantizers_take_each_others_imatrix(geniex_bin, llamacpp_bin, tmp_path):
    im = tmp_path / "im.gguf"
    assert run([geniex_bin, "imatrix", "-m", MODELS / "tiny-qwen3-f32.gguf", "-f", TEXT, "-o", im,
                "-c", "64", "--chunks", "3"]).returncode == 0
    src = MODELS / "tiny-qwen3-f16.gguf"
    ref, ours = tmp_path / "ref.gguf", tmp_path / "ours.gguf"
    r = run([llamacpp_bin("llama-quantize"), "--imatrix", im, src, ref, "Q4_0", "2"])
    assert r.returncode == 0, r.stderr[-2000:]
    g = run([geniex_bin, "quantize", "--imatrix", im, src, ours, "Q4_0", "-t", "2"])
    assert g.returncode == 0, g.stderr
    assert ref.read_bytes() == ours.read_bytes()


def test_bad_input(geniex_bin, tmp_path):
    out = tmp_path / "im.gguf"
    model = MODELS / "tiny-llama-f32.gguf"
    r = run([geniex_bin, "imatrix", "-m", model, "-f", TEXT, "-o", out, "-c", "100000"])
    assert r.returncode == 1 and "two chunks" in r.stderr
    r = run([geniex_bin, "imatrix", "-m", model, "-f", tmp_path / "missing.txt", "-o", out])
    assert r.returncode == 1 and "cannot read" in r.stderr
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(model.read_bytes()[:1000])
    r = run([geniex_bin, "imatrix", "-m", bad, "-f", TEXT, "-o", out, "-c", "64"])
    assert r.returncode == 1 and r.stderr.strip()
    r = run([geniex_bin, "imatrix", "-m", model, "-f", TEXT, "-o", out, "-c", "8"])
    assert r.returncode == 2
    assert not out.exists()


def test_activation_ranges(geniex_bin, tmp_path):
    """--activation-ranges: one entry per imatrix entry, ordered statistics, and the mean square
    of every weight's inputs equal to what the imatrix sums say."""
    import json

    im, rj = tmp_path / "im.gguf", tmp_path / "ranges.json"
    r = run([geniex_bin, "imatrix", "-m", MODELS / "tiny-gemma3-f32.gguf", "-f", TEXT, "-o", im,
             "-c", "64", "--chunks", "2", "--activation-ranges", rj])
    assert r.returncode == 0, r.stderr
    doc = json.loads(rj.read_text())
    assert doc["format"] == "geniex.activation_ranges" and doc["version"] == 1
    assert doc["chunks"] == 2 and doc["chunk_size"] == 64
    sums, _ = read(im)
    names = {n[: -len(".in_sum2")] for n in sums if n.endswith(".in_sum2")}
    assert set(doc["tensors"]) == names
    for name, t in doc["tensors"].items():
        s = sums[name + ".in_sum2"]
        count = sums[name + ".counts"][0]
        assert t["tokens"] == count and t["values"] == count * len(s) and t["exact"]
        assert t["min"] <= t["p0.1"] <= t["p1"] <= t["p50"] <= t["p99"] <= t["p99.9"] <= t["max"]
        assert t["abs_p99"] <= t["abs_p99.9"] <= t["abs_p99.99"] <= max(-t["min"], t["max"])
        want = s.sum() / (count * len(s))
        assert abs(t["mean_square"] - want) <= 1e-5 * want, name
