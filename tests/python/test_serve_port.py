"""Two `geniex serve` on one port (issue 28): the second fails to bind with a clear message and
exits 1 (no SO_REUSEPORT, the bind checked before "listening" is printed), so every request
reaches the first."""
from __future__ import annotations

import subprocess
import time

import requests

from conftest import start_server


def test_second_server_on_a_taken_port_exits_1_and_the_first_gets_every_request(
        geniex_bin, gemma_gguf):
    first = start_server(geniex_bin, gemma_gguf, "--parallel", "1")
    try:
        port = int(first.url.rsplit(":", 1)[1])
        t0 = time.monotonic()
        try:
            second = subprocess.run(
                [str(geniex_bin), "serve", "-m", str(gemma_gguf), "--port", str(port), "-t", "1"],
                capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"the second server kept running on port {port}: "
                                 f"{e.stdout!r}") from None
        assert second.returncode == 1, (second.returncode, second.stdout, second.stderr)
        assert "listening" not in second.stdout, second.stdout
        assert f"port {port} on 127.0.0.1 is already in use" in second.stderr, second.stderr
        assert time.monotonic() - t0 < 30

        before = first.metrics()['geniex_requests_total{route="/health",status="200"}']
        for _ in range(8):
            r = requests.get(first.url + "/health", timeout=10)
            assert r.status_code == 200
        after = first.metrics()['geniex_requests_total{route="/health",status="200"}']
        assert after - before == 8
    finally:
        assert first.stop() == 0
