"""`pip wheel .` gives a wheel that installs into a fresh venv (no network: --no-deps, and the
native API needs nothing else) and generates there: greedy output equal to `geniex run`, the
wheel's own `geniex` CLI included. The build reuses pyproject.toml's build folder
(build/python-<wheel tag>, which scripts/setup.sh's `pip install .` filled), so it is
incremental."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/models/tiny-qwen2-q8_0.gguf"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, CC=os.environ.get("CC", "cc"), CXX=os.environ.get("CXX", "c++"),
               CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"))
    env.pop("PYTHONPATH", None)
    # The same settings as scripts/setup.sh's install, so the build folder is reused as is.
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                        "--disable-pip-version-check", "-q",
                        "--config-settings=cmake.define.GENIEX_WERROR=ON", "-w", str(out),
                        str(REPO)], capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    wheels = list(out.glob("geniex-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"geniex/__init__.py", "geniex/errors.py", "geniex/py.typed", "geniex/_core.pyi",
            "geniex/transformers/__init__.py"} <= names
    assert any(n.startswith("geniex/_core.") and n.endswith(".so") for n in names)
    assert "geniex/plugins/libgeniex_npu_ref.so" in names
    assert any(n.endswith("/scripts/geniex") for n in names), "the CLI is not in the wheel"
    # Nothing machine-specific: kernels dispatch on the running CPU, no -march=native.
    tag = wheel.name.split("-", 2)[2].removesuffix(".whl")
    commands = (REPO / "build" / f"python-{tag}" / "compile_commands.json").read_text()
    assert "-march=native" not in commands and "-mtune=native" not in commands


def test_wheel_installs_into_a_fresh_venv_and_generates(wheel, tmp_path, geniex_bin):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # pip below installs into it (--python)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-index",
                        "--no-deps", "-q", "--disable-pip-version-check", str(wheel)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    code = ("import json, sys, geniex\n"
            "m = geniex.load(sys.argv[1], device='cpu', n_threads=2)\n"
            "g = m.generate('Hello world, this is', max_tokens=16, temperature=0)\n"
            "print(json.dumps({'file': geniex.__file__, 'tokens': g.tokens, 'text': g.text}))\n")
    r = subprocess.run([str(py), "-c", code, str(TINY)], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(env_dir))
    ref = subprocess.run([str(geniex_bin), "run", "-m", str(TINY), "--raw", "-p",
                          "Hello world, this is", "-n", "16", "--temp", "0", "-t", "2", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert ref.returncode == 0, ref.stderr
    ref_json = json.loads(ref.stdout)
    assert (got["tokens"], got["text"]) == (ref_json["token_ids"], ref_json["text"])
    # The wheel's CLI, installed on the venv's PATH, gives the same.
    cli = subprocess.run([str(env_dir / "bin" / "geniex"), "run", "-m", str(TINY), "--raw", "-p",
                          "Hello world, this is", "-n", "16", "--temp", "0", "-t", "2", "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["token_ids"] == ref_json["token_ids"]
