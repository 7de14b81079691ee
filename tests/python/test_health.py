"""`geniex serve` configured only by GENIEX_* environment variables, from the installed tree, and
`geniex health` (the container's HEALTHCHECK) reporting on it."""
from __future__ import annotations

import re
import socket
import subprocess
import time

import pytest
import requests

from conftest import REPO
from test_install import clean_env, install_to

MODEL = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"


@pytest.fixture(scope="module")
def geniex(tmp_path_factory):
    return install_to(tmp_path_factory.mktemp("prefix")) / "bin" / "geniex"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, geniex, env, *args):
        self.proc = subprocess.Popen([str(geniex), "serve", *args], env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        if not m:
            self.proc.kill()
            _, err = self.proc.communicate()
            pytest.fail(f"geniex serve did not start: {line!r} {err}")
        self.url = m.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        return err


def health(geniex, *args, env=None):
    return subprocess.run([str(geniex), "health", *args], capture_output=True, text=True,
                          timeout=60, env=env if env is not None else clean_env())


def test_serve_from_environment_only_and_health(geniex, tmp_path):
    key_file = tmp_path / "api_key"
    key_file.write_text("s3cret-key\n")  # a secret file ends with a newline: dropped
    port = free_port()
    env = clean_env(GENIEX_HOST="127.0.0.1", GENIEX_PORT=str(port), GENIEX_MODEL=str(MODEL),
                    GENIEX_API_KEY_FILE=str(key_file), GENIEX_PARALLEL="3", GENIEX_CTX="320",
                    GENIEX_DEVICE="cpu", GENIEX_THREADS="1", GENIEX_PROT="1")
    srv = Serve(geniex, env)  # no flags at all
    try:
        assert srv.port == port
        # geniex health finds the server through the same variables, and by flags.
        r = health(geniex, env=clean_env(GENIEX_PORT=str(port)))
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.fullmatch(rf"healthy: 127\.0\.0\.1:{port} .*\"status\":\s*\"ok\".*\n", r.stdout)
        r = health(geniex, "--host", "localhost", "--port", str(port))
        assert r.returncode == 0, r.stdout + r.stderr
        # The key from the file guards /v1; the other variables became the server's settings.
        assert requests.get(srv.url + "/v1/models", timeout=10).status_code == 401
        auth = {"Authorization": "Bearer s3cret-key"}
        props = requests.get(srv.url + "/props", headers=auth, timeout=10).json()
        assert props["n_ctx"] == 320 and props["total_slots"] == 3
        models = requests.get(srv.url + "/v1/models", headers=auth, timeout=10).json()
        assert models["data"][0]["id"] == "tiny-llama-q8_0"
    finally:
        err = srv.stop()
    assert "unknown environment variable GENIEX_PROT ignored (did you mean GENIEX_PORT?)" in err
    # Loopback with a key: no exposure warning.
    assert "without an API key" not in err
    # Stopped: health says so in one line and exits 1.
    r = health(geniex, "--port", str(port), "--timeout", "2")
    assert r.returncode == 1
    assert re.fullmatch(rf"unhealthy: 127\.0\.0\.1:{port}: connect: Connection refused\n", r.stdout)


def test_flags_win_over_environment(geniex):
    env = clean_env(GENIEX_PORT=str(free_port()), GENIEX_MODEL="/nonexistent.gguf",
                    GENIEX_CTX="1", GENIEX_API_KEY="from-env")
    # Every variable above would fail or differ; the flags replace them all.
    srv = Serve(geniex, env, "-m", str(MODEL), "--port", "0", "-c", "256", "-t", "1",
                "--api-key", "from-flag", "--device", "cpu")
    try:
        assert str(srv.port) != env["GENIEX_PORT"]
        r = requests.get(srv.url + "/props", headers={"Authorization": "Bearer from-flag"}, timeout=10)
        assert r.status_code == 200 and r.json()["n_ctx"] == 256
    finally:
        srv.stop()


def test_non_loopback_without_key_warns(geniex):
    env = clean_env(GENIEX_HOST="0.0.0.0", GENIEX_PORT="0", GENIEX_MODEL=str(MODEL),
                    GENIEX_THREADS="1", GENIEX_DEVICE="cpu")
    srv = Serve(geniex, env)
    try:
        # geniex health maps 0.0.0.0 to loopback.
        r = health(geniex, "--host", "0.0.0.0", "--port", str(srv.port))
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        err = srv.stop()
    assert "warning: listening on 0.0.0.0 without an API key" in err


@pytest.mark.parametrize("var,value,message", [
    ("GENIEX_PORT", "abc", "$GENIEX_PORT abc: not a whole number"),
    ("GENIEX_PORT", "70000", "$GENIEX_PORT 70000: too large (at most 65535)"),
    ("GENIEX_PARALLEL", "0", "$GENIEX_PARALLEL 0: "),
    ("GENIEX_CTX", "1", "$GENIEX_CTX 1: too small"),
    ("GENIEX_THREADS", "-2", "$GENIEX_THREADS -2: "),
    ("GENIEX_DEVICE", "tpu", "$GENIEX_DEVICE tpu: "),
    ("GENIEX_API_KEY_FILE", "/nonexistent/key", "$GENIEX_API_KEY_FILE /nonexistent/key: cannot read"),
])
def test_bad_environment_values_are_usage_errors(geniex, var, value, message):
    env = clean_env(**{"GENIEX_MODEL": str(MODEL), "GENIEX_PORT": "0", var: value})
    r = subprocess.run([str(geniex), "serve"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith("geniex serve: " + message), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_key_file_problems(geniex, tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    both = clean_env(GENIEX_MODEL=str(MODEL), GENIEX_API_KEY="k", GENIEX_API_KEY_FILE=str(empty))
    for env, message in [(clean_env(GENIEX_MODEL=str(MODEL), GENIEX_API_KEY_FILE=str(empty)),
                          f"$GENIEX_API_KEY_FILE {empty}: empty file"),
                         (both, "$GENIEX_API_KEY and $GENIEX_API_KEY_FILE are both set")]:
        r = subprocess.run([str(geniex), "serve"], capture_output=True, text=True, timeout=60,
                           env=env)
        assert r.returncode == 2 and message in r.stderr, r.stderr


def test_health_errors(geniex):
    # A port nothing listens on, a host that does not resolve, a bad flag, a bad variable.
    r = health(geniex, "--port", str(free_port()), "--timeout", "2")
    assert r.returncode == 1 and r.stdout.startswith("unhealthy: ") and r.stdout.count("\n") == 1
    r = health(geniex, "--host", "no-such-host.invalid", "--port", "1", "--timeout", "2")
    assert r.returncode == 1 and "cannot resolve 'no-such-host.invalid'" in r.stdout
    assert health(geniex, "--port", "99999").returncode == 2
    r = health(geniex, env=clean_env(GENIEX_PORT="x"))
    assert r.returncode == 2 and "$GENIEX_PORT x: not a whole number" in r.stderr


def test_health_reports_a_non_http_peer(geniex):
    """Something that is not geniex serve on the port: unhealthy, with what it said."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = subprocess.Popen([str(geniex), "health", "--port", str(port), "--timeout", "5"],
                                stdout=subprocess.PIPE, text=True, env=clean_env())
        conn, _ = s.accept()
        conn.recv(1024)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.close()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert out == f"unhealthy: 127.0.0.1:{port}: not an HTTP answer: SSH-2.0-OpenSSH_9.2\n"


def test_health_times_out_on_a_silent_server(geniex):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        t0 = time.monotonic()
        r = health(geniex, "--port", str(port), "--timeout", "0.5")
        took = time.monotonic() - t0
    assert r.returncode == 1 and "no answer within the timeout" in r.stdout
    assert took < 10


def test_threads_default_to_the_cpus_the_process_may_use(geniex):
    """No -t and no GENIEX_THREADS: the CPU unit gets the CPUs of the process's affinity mask
    (taskset here; a container's --cpus quota the same way), not the machine's core count."""
    import os
    import shutil

    taskset = shutil.which("taskset")
    assert taskset, "taskset (util-linux) missing"
    cpu = sorted(os.sched_getaffinity(0))[0]
    env = clean_env(GENIEX_MODEL=str(MODEL), GENIEX_PORT="0", GENIEX_DEVICE="cpu")
    proc = subprocess.Popen([taskset, "-c", str(cpu), str(geniex), "serve"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert re.search(r"cpu\([^)]*, 1 threads\)", line), line
