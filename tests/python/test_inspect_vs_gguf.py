"""`geniex inspect --json` against the reference reader of the `gguf` PyPI package.

For the real Gemma 3 270M file and llama.cpp vocab files of each tokenizer family, every
metadata key (order, type, element type, full value), every tensor (name, type, shape, sizes,
offset) and the header values must agree with gguf.GGUFReader.
"""
import json
import os
import pathlib
import shutil

import pytest

from conftest import run

gguf = pytest.importorskip("gguf")

_REPO = pathlib.Path(__file__).resolve().parents[2]
_SHARED = pathlib.Path(os.environ.get("GENIEX_SHARED_DIR", _REPO.parent / "shared"))
# The header pseudo-fields GGUFReader puts in front of the real metadata.
_SYNTHETIC = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")


# Vocab files of each family: WPM (bert-bge), SPM with scores (llama-spm, phi-3), byte-level
# BPE with merges (gpt-2, deepseek-coder, qwen2). The other vocab files hold the same kinds of
# values; GGUFReader takes 1-6 s on each, which was 60 s of the suite for no new case.
_VOCAB_NAMES = ("bert-bge", "llama-spm", "phi-3", "gpt-2", "deepseek-coder", "qwen2")


def _vocab_files():
    """The chosen vocab GGUFs: the project's copies (tests/data/tokenizer, which adds the
    qwen2 file we build), else ../shared/testdata/tokenizer."""
    found = {}
    for d in (_SHARED / "testdata" / "tokenizer", _REPO / "tests" / "data" / "tokenizer"):
        if d.is_dir():
            for name in _VOCAB_NAMES:
                p = d / f"ggml-vocab-{name}.gguf"
                if p.is_file():
                    found[p.name] = p
    assert len(found) == len(_VOCAB_NAMES), f"vocab GGUFs not found: {sorted(found)}"
    return found


_VOCABS = _vocab_files()
_CASES = ["gemma"] + sorted(_VOCABS)


@pytest.fixture
def model_file(request, gemma_gguf):
    if request.param == "gemma":
        return gemma_gguf
    return _VOCABS[request.param]


@pytest.fixture(scope="module")
def gemma_reader(gemma_gguf):
    """GGUFReader takes seconds on a 262144-token vocabulary: read Gemma once."""
    return gguf.GGUFReader(gemma_gguf)


def _inspect_json(geniex_bin, path, *extra):
    r = run([geniex_bin, "inspect", "--json", *extra, path])
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return json.loads(r.stdout)


def _expected_value(field):
    """A ReaderField's full value as plain Python (strings decoded from UTF-8)."""
    return field.contents()


@pytest.mark.parametrize("model_file", _CASES, indirect=True)
def test_inspect_matches_gguf_reader(request, geniex_bin, model_file):
    ours = _inspect_json(geniex_bin, model_file)
    if request.node.callspec.params["model_file"] == "gemma":
        ref = request.getfixturevalue("gemma_reader")
    else:
        ref = gguf.GGUFReader(model_file)

    # Header.
    assert ours["path"] == str(model_file)
    assert ours["file_size"] == os.path.getsize(model_file)
    assert ours["version"] == int(ref.fields["GGUF.version"].contents())
    assert len(ours["tensors"]) == int(ref.fields["GGUF.tensor_count"].contents())
    assert len(ours["metadata"]) == int(ref.fields["GGUF.kv_count"].contents())
    assert ours["alignment"] == int(ref.alignment)
    assert ours["data_offset"] == int(ref.data_offset)

    # Metadata: same keys in the same order, then type and full value of each.
    ref_fields = [f for name, f in ref.fields.items() if name not in _SYNTHETIC]
    assert [m["key"] for m in ours["metadata"]] == [f.name for f in ref_fields]
    for m, f in zip(ours["metadata"], ref_fields):
        where = f"{model_file.name}: {m['key']}"
        assert m["type"] == f.types[0].name, where
        expected = _expected_value(f)
        if f.types[0] == gguf.GGUFValueType.ARRAY:
            # parts: key length, key, value type, element type, count, elements...
            elem_type = gguf.GGUFValueType(int(f.parts[3][0]))
            assert m["elem_type"] == elem_type.name, where
            assert m["count"] == len(f.data) == len(expected), where
            assert len(m["value"]) == len(expected), where
            for i, (a, b) in enumerate(zip(m["value"], expected)):
                assert a == b and type(a) is type(b), f"{where}[{i}]: {a!r} != {b!r}"
        else:
            assert "elem_type" not in m and "count" not in m, where
            got = m["value"]
            assert got == expected, f"{where}: {got!r} != {expected!r}"
            assert type(got) is type(expected), f"{where}: {got!r} vs {expected!r}"

    # Tensors. GGUFReader's data_offset is absolute; ours is relative to the data section.
    assert len(ours["tensors"]) == len(ref.tensors)
    for t, rt in zip(ours["tensors"], ref.tensors):
        where = f"{model_file.name}: tensor {rt.name}"
        assert t["name"] == rt.name, where
        assert t["type"] == rt.tensor_type.name, where
        assert t["ne"] == [int(d) for d in rt.shape], where
        assert t["n_elements"] == int(rt.n_elements), where
        assert t["n_bytes"] == int(rt.n_bytes), where
        assert ours["data_offset"] + t["offset"] == int(rt.data_offset), where
        assert ours["data_offset"] + t["offset"] + t["n_bytes"] <= ours["file_size"], where


def test_gemma_has_tensors(geniex_bin, gemma_gguf):
    ours = _inspect_json(geniex_bin, gemma_gguf)
    assert len(ours["tensors"]) > 100
    names = {t["name"] for t in ours["tensors"]}
    assert "token_embd.weight" in names


def test_max_array_abbreviates_json(geniex_bin, gemma_gguf):
    ours = _inspect_json(geniex_bin, gemma_gguf, "--max-array", "3")
    full = {m["key"]: m for m in _inspect_json(geniex_bin, gemma_gguf)["metadata"]}
    tokens = next(m for m in ours["metadata"] if m["key"] == "tokenizer.ggml.tokens")
    assert tokens["value"] == full["tokenizer.ggml.tokens"]["value"][:3]
    assert tokens["count"] == full["tokenizer.ggml.tokens"]["count"] > 3


def test_text_output(geniex_bin, gemma_gguf, gemma_reader):
    r = run([geniex_bin, "inspect", gemma_gguf])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    ref = gemma_reader
    n_tokens = len(ref.fields["tokenizer.ggml.tokens"].data)

    assert f"GGUF file: {gemma_gguf}" in out
    assert f"data offset:  {ref.data_offset}" in out
    assert f"Tensors ({len(ref.tensors)}):" in out
    for rt in ref.tensors[:5]:
        line = next(l for l in out.splitlines() if f" {rt.name} " in l)
        assert rt.tensor_type.name in line and str(rt.n_elements) in line
    tokens_line = next(l for l in out.splitlines() if "tokenizer.ggml.tokens =" in l)
    assert "[STRING]" in tokens_line
    assert f"... ({n_tokens} items)" in tokens_line
    assert len(tokens_line) < 400  # abbreviated, not all 262144 tokens
    assert "Summary:" in out and "parameters:" in out


def test_version_and_usage(geniex_bin):
    r = run([geniex_bin, "--version"])
    assert r.returncode == 0 and r.stdout.startswith("geniex ")
    assert run([geniex_bin]).returncode == 2
    assert run([geniex_bin, "inspect", "--no-such-flag"]).returncode == 2
    assert run([geniex_bin, "no-such-command"]).returncode == 2


def test_default_model_from_env(geniex_bin, gemma_gguf, tmp_path):
    env = dict(os.environ, GENIEX_MODEL=str(gemma_gguf))
    r = run([geniex_bin, "inspect", "--json", "--max-array", "0"], env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["path"] == str(gemma_gguf)

    missing = tmp_path / "nope.gguf"
    env = dict(os.environ, GENIEX_MODEL=str(missing))
    r = run([geniex_bin, "inspect"], env=env)
    assert r.returncode == 1
    assert str(missing) in r.stderr and "scripts/setup.sh" in r.stderr


def test_missing_file(geniex_bin, tmp_path):
    path = tmp_path / "does-not-exist.gguf"
    r = run([geniex_bin, "inspect", path])
    assert r.returncode == 1
    assert str(path) in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("keep", [0, 3, 8, 23, 100, "half", "minus1"])
def test_truncated_file(geniex_bin, tokenizer_testdata, tmp_path, keep):
    src = tokenizer_testdata / "ggml-vocab-llama-spm.gguf"
    data = src.read_bytes()
    n = {"half": len(data) // 2, "minus1": len(data) - 1}.get(keep, keep)
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(data[:n])
    for extra in ([], ["--json"]):
        r = run([geniex_bin, "inspect", *extra, bad])
        assert r.returncode == 1, (n, r.returncode, r.stderr)
        assert str(bad) in r.stderr and len(r.stderr.strip()) > len(str(bad))
        assert "internal error" not in r.stderr and "terminate" not in r.stderr
        assert r.stdout == ""


def test_corrupt_magic(geniex_bin, tokenizer_testdata, tmp_path):
    bad = tmp_path / "bad-magic.gguf"
    shutil.copyfile(tokenizer_testdata / "ggml-vocab-gpt-2.gguf", bad)
    with open(bad, "r+b") as f:
        f.write(b"GGUX")
    r = run([geniex_bin, "inspect", bad])
    assert r.returncode == 1 and str(bad) in r.stderr


def test_invalid_utf8_string(geniex_bin, tokenizer_testdata, tmp_path):
    """A metadata string that is not UTF-8 is shown with U+FFFD, not a crash."""
    data = bytearray((tokenizer_testdata / "ggml-vocab-gpt-2.gguf").read_bytes())
    ours = _inspect_json(geniex_bin, tokenizer_testdata / "ggml-vocab-gpt-2.gguf")
    arch = next(m["value"] for m in ours["metadata"] if m["key"] == "general.architecture")
    i = data.find(len(arch).to_bytes(8, "little") + arch.encode()) + 8
    assert i >= 8
    data[i] = 0xFF
    bad = tmp_path / "bad-utf8.gguf"
    bad.write_bytes(data)
    r = run([geniex_bin, "inspect", bad])  # text output escapes the bad byte
    assert r.returncode == 0, r.stderr
    assert f'general.architecture = "\\xff{arch[1:]}"' in r.stdout
    got = _inspect_json(geniex_bin, bad)
    arch_bad = next(m["value"] for m in got["metadata"] if m["key"] == "general.architecture")
    assert arch_bad == "\ufffd" + arch[1:]
