"""Hostile HTTP input against `geniex serve` (issue 29): none of it may crash the server, take its
memory or starve /health. One test per attack; each checks the server's RSS (VmRSS of the process)
and /health latency during or after the attack. Raw sockets for the malformed cases."""
from __future__ import annotations

import json
import select
import socket
import threading
import time
import zlib

import pytest
import requests

from conftest import start_server

KEY = "attack-key"
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # the model keeps counting: long generations on demand
MB = 1 << 20
RSS_SLACK = 64 * MB  # what an attack may add to the server's RSS (each one tries for 200 MB+)


def rss(srv) -> int:
    with open(f"/proc/{srv.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def health_latency(srv, timeout=5.0) -> float:
    t0 = time.monotonic()
    r = requests.get(srv.url + "/health", timeout=timeout)
    assert r.status_code == 200, r.text
    return time.monotonic() - t0


def assert_healthy(srv, rss_before: int):
    """After an attack: RSS within the slack of where it was, /health fast."""
    grown = rss(srv) - rss_before
    assert grown < RSS_SLACK, f"server RSS grew by {grown / MB:.0f} MB"
    assert srv.proc.poll() is None, "the server died"
    assert health_latency(srv) < 1.0


def address(srv):
    host, port = srv.url.removeprefix("http://").split(":")
    return host, int(port)


def read_response(s: socket.socket, timeout=10.0) -> bytes:
    """Everything the server sends until it closes or `timeout` passes (or a reset)."""
    s.settimeout(timeout)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def answered(s: socket.socket) -> bool:
    """Whether the server has sent something (or closed): a client that sees it stops sending."""
    return bool(select.select([s], [], [], 0)[0])


def status_of(raw: bytes) -> int:
    assert raw.startswith(b"HTTP/1.1 "), raw[:200]
    return int(raw[9:12])


def completion_body(srv, **extra) -> bytes:
    return json.dumps({"model": srv.model_id, "prompt": COUNTING, "max_tokens": 2,
                       **extra}).encode()


@pytest.fixture(scope="module")
def srv(geniex_bin, gemma_gguf):
    s = start_server(geniex_bin, gemma_gguf, "--parallel", "4", "--queue", "4", "--max-body-mb",
                     "1", "--max-conns-per-client", "64", api_key=KEY)
    # Warm up: the weights and the KV cache are resident before RSS is compared.
    for _ in range(2):
        r = requests.post(s.base_url + "/completions", data=completion_body(s, max_tokens=8),
                          headers=s.headers(), timeout=60)
        assert r.status_code == 200, r.text
    yield s
    assert s.stop() == 0


def post_raw(srv, head: bytes, body: bytes = b"") -> bytes:
    with socket.create_connection(address(srv)) as s:
        s.sendall(head + body)
        return read_response(s)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_body_is_415_not_inflated(srv, encoding):
    # 256 MiB of JSON whitespace inside a 1 MB limit: the server must not inflate it.
    wbits = 31 if encoding == "gzip" else 15
    z = zlib.compressobj(9, zlib.DEFLATED, wbits)
    parts = [z.compress(b'{"prompt": "hi", "max_tokens": 1,')]
    spaces = b" " * MB
    parts += [z.compress(spaces) for _ in range(256)]
    parts += [z.compress(b'"model": "x"}'), z.flush()]
    bomb = b"".join(parts)
    assert len(bomb) < MB
    before = rss(srv)
    t0 = time.monotonic()
    r = requests.post(srv.base_url + "/completions", data=bomb, timeout=60,
                      headers={**srv.headers(), "Content-Type": "application/json",
                               "Content-Encoding": encoding})
    elapsed = time.monotonic() - t0
    assert r.status_code == 415, (r.status_code, r.text[:200], f"{elapsed:.1f}s")
    assert r.json()["error"]["type"] == "invalid_request_error"
    assert elapsed < 2.0
    assert_healthy(srv, before)


def test_chunked_body_over_the_limit_is_413_early(srv):
    before = rss(srv)
    peak = before
    sent = 0
    total = 400 * MB
    chunk = b"%x\r\n" % MB + b" " * MB + b"\r\n"
    with socket.create_connection(address(srv)) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                  KEY.encode() + b"\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        s.settimeout(5)
        try:
            while sent < total:
                s.sendall(chunk)
                sent += MB
                if sent % (16 * MB) == 0:
                    peak = max(peak, rss(srv))
                if answered(s):
                    break
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
        raw = read_response(s)
    peak = max(peak, rss(srv))
    assert raw, f"no response after {sent / MB:.0f} MB"
    assert status_of(raw) == 413, raw[:300]
    assert b"request_too_large" in raw
    assert sent < total, "the server read the whole 400 MB body"
    assert peak - before < RSS_SLACK, f"RSS grew by {(peak - before) / MB:.0f} MB"
    assert_healthy(srv, before)


def test_slow_connections_do_not_starve_health(srv):
    # 45 connections each sending one header byte every 1.5 s (more than a thread per
    # connection server has workers), while /health must answer fast.
    conns = []
    for _ in range(45):
        s = socket.create_connection(address(srv))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        conns.append(s)
    before = rss(srv)
    latencies = []
    try:
        end = time.monotonic() + 6
        next_byte = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= next_byte:
                for s in conns:
                    try:
                        s.sendall(b"X")
                    except OSError:
                        pass
                next_byte += 1.5
            try:
                latencies.append(health_latency(srv, timeout=3))
            except requests.RequestException as e:
                latencies.append(float("inf"))
                print("health failed:", e)
            time.sleep(0.2)
    finally:
        for s in conns:
            s.close()
    assert max(latencies) < 1.0, f"/health took up to {max(latencies):.2f}s"
    assert_healthy(srv, before)


def test_header_flood_is_refused_with_bounded_memory(srv):
    before = rss(srv)
    sent = 0
    total = 200 * MB
    line = b"X-Pad: " + b"a" * 1015 + b"\r\n"  # 1 KiB lines: each one under any line limit
    with socket.create_connection(address(srv)) as s:
        s.settimeout(5)
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      KEY.encode() + b"\r\n")
            block = line * 1024
            while sent < total:
                s.sendall(block)
                sent += len(block)
                if answered(s):
                    break
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            pass
        if sent >= total:
            try:
                s.sendall(b"\r\n")
            except OSError:
                pass
        raw = read_response(s)
    grown = rss(srv) - before
    assert sent < total, "the server read 200 MB of header lines"
    if raw:
        assert status_of(raw) == 431, raw[:300]
    assert grown < RSS_SLACK, f"RSS grew by {grown / MB:.0f} MB"
    assert_healthy(srv, before)


def test_many_ranges_get_the_whole_page_once(srv):
    page = requests.get(srv.url + "/", timeout=10)
    assert page.status_code == 200
    before = rss(srv)
    r = requests.get(srv.url + "/", headers={"Range": "bytes=" + ",".join(["0-"] * 2700)},
                     timeout=10)
    assert r.status_code == 200
    assert r.content == page.content
    assert int(r.headers["Content-Length"]) == len(page.content)
    assert "multipart" not in r.headers.get("Content-Type", "")
    assert_healthy(srv, before)


def test_range_on_a_completion_returns_the_whole_json(srv):
    r = requests.post(srv.base_url + "/completions", data=completion_body(srv), timeout=60,
                      headers={**srv.headers(), "Content-Type": "application/json",
                               "Range": "bytes=0-5"})
    assert r.status_code == 200, r.text
    assert r.json()["object"] == "text_completion"


def test_two_different_content_lengths_are_400(srv):
    body = completion_body(srv)
    raw = post_raw(srv, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                   KEY.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: " +
                   str(len(body)).encode() + b"\r\nContent-Length: 5\r\n\r\n", body)
    assert status_of(raw) == 400, raw[:300]


def test_non_streaming_clients_that_leave_are_cancelled(srv):
    before = srv.metrics()["geniex_requests_cancelled_total"]
    body = json.dumps({"model": srv.model_id, "prompt": COUNTING, "max_tokens": 3000}).encode()
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() +
            b"\r\n\r\n")
    socks = []
    for _ in range(4):
        s = socket.create_connection(address(srv))
        s.sendall(head + body)
        socks.append(s)
    time.sleep(1.0)
    assert srv.metrics()["geniex_requests_in_flight"] == 4
    for s in socks:
        s.close()
    t0 = time.monotonic()
    m = srv.metrics()
    while time.monotonic() - t0 < 60:
        m = srv.metrics()
        if m["geniex_requests_in_flight"] == 0:
            break
        time.sleep(0.05)
    freed = time.monotonic() - t0
    assert freed < 3.0, f"the abandoned generations ran {freed:.1f}s after the clients left"
    assert m["geniex_requests_cancelled_total"] == before + 4
    assert health_latency(srv) < 1.0


def connect_from(srv, source: str) -> socket.socket:
    """A connection from another loopback address (127.0.0.0/8 is all ours): another client."""
    return socket.create_connection(address(srv), source_address=(source, 0))


def hold(srv, source: str, n: int) -> list[socket.socket]:
    """n idle connections from `source` that the server took. One it refused (a connection that
    start_server's polling closed may still be counted for a moment) is replaced."""
    held: list[socket.socket] = []
    for _ in range(5):
        held += [connect_from(srv, source) for _ in range(n - len(held))]
        time.sleep(0.3)
        for c in [c for c in held if answered(c)]:
            c.close()
            held.remove(c)
        if len(held) == n:
            return held
    raise AssertionError(f"the server did not keep {n} connections from {source}")


def refused(srv, source: str) -> bytes:
    with connect_from(srv, source) as extra:
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        return read_response(extra, timeout=5)


def test_connections_per_client_and_in_total_are_capped(geniex_bin, gemma_gguf):
    s = start_server(geniex_bin, gemma_gguf, "--max-conns-per-client", "4", "--max-conns", "6")
    idle = []
    try:
        before = rss(s)
        idle += hold(s, "127.0.0.1", 4)
        raw = refused(s, "127.0.0.1")
        assert status_of(raw) == 503, raw[:300]
        assert b"too_many_connections" in raw and b"from this client" in raw
        # Another client still gets in, up to the total.
        idle += hold(s, "127.0.0.2", 2)
        raw = refused(s, "127.0.0.3")
        assert status_of(raw) == 503, raw[:300]
        assert b"on this server" in raw
        for c in idle:
            c.close()
        idle = []
        time.sleep(0.2)
        assert_healthy(s, before)
    finally:
        for c in idle:
            c.close()
        assert s.stop() == 0


@pytest.mark.slow
def test_a_header_sent_too_slowly_is_cut_at_the_deadline(srv):
    # One byte per second never completes a header: the server closes the connection at the
    # 10 s header deadline instead of keeping its socket for as long as the client likes.
    t0 = time.monotonic()
    closed = False
    with socket.create_connection(address(srv)) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        while not closed and time.monotonic() - t0 < 20:
            try:
                s.sendall(b"X")
                closed = answered(s) and read_response(s, timeout=2) == b""
            except OSError:
                closed = True
            time.sleep(0.5)
    elapsed = time.monotonic() - t0
    assert closed, f"still open after {elapsed:.1f}s"
    assert 9.0 < elapsed < 13.0, elapsed
