"""`geniex serve` errors and limits on the real model: every error status in OpenAI's shape
(400 malformed / truncated JSON and wrong types, 401, 404, 413, 429, 503), client disconnect
mid-stream frees the slot, SIGTERM finishes or cancels in-flight work and exits 0."""
from __future__ import annotations

import json
import signal
import socket
import threading
import time

import openai
import pytest
import requests

from conftest import start_server

COUNTING = "1, 2, 3, 4, 5, 6, 7, 8,"  # the model keeps counting: long generations on demand


def assert_openai_error(r: requests.Response, status: int, param=None, code=None):
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert isinstance(err["message"], str) and err["message"]
    if param is not None:
        assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    return err


def post(srv, path, body, **kw):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    headers = {"Content-Type": "application/json", **srv.headers(), **kw.pop("headers", {})}
    return requests.post(srv.base_url + path, data=data, headers=headers, timeout=60, **kw)


def chat_body(srv, **extra):
    return {"model": srv.model_id, "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 2, **extra}


@pytest.mark.parametrize("body", [
    b"", b"{", b'{"model": "x", "messages": [', b'{"model": "x",}', b"[1, 2]", b"null",
    b'{"model": "x" "messages": []}', b"\xff\xfe garbage", b'"just a string"',
])
def test_malformed_and_truncated_json_is_400(gemma_server, body):
    err = assert_openai_error(post(gemma_server, "/chat/completions", body), 400)
    assert err["type"] == "invalid_request_error" and err["param"] is None


@pytest.mark.parametrize("extra,param,code", [
    ({"temperature": "hot"}, "temperature", "invalid_type"),
    ({"max_tokens": "10"}, "max_tokens", "invalid_type"),
    ({"max_tokens": 1.5}, "max_tokens", "invalid_type"),
    ({"stream": 1}, "stream", "invalid_type"),
    ({"stop": {"a": 1}}, "stop", "invalid_type"),
    ({"messages": "hi"}, "messages", "invalid_type"),
    ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content", "invalid_type"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role", "invalid_value"),
    ({"temperature": 5}, "temperature", "invalid_value"),
    ({"top_p": 1.5}, "top_p", "invalid_value"),
    ({"max_tokens": -3}, "max_tokens", "invalid_value"),
    ({"top_logprobs": 30, "logprobs": True}, "top_logprobs", "invalid_value"),
    ({"n": 2}, "n", "unsupported_parameter"),
    ({"tools": [{"type": "function", "function": {"name": "f g"}}]}, "tools[0].function.name",
     "invalid_value"),
    ({"functions": [{"name": "f"}]}, "functions", "unsupported_parameter"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema",
     "missing_required_parameter"),
    ({"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "not": {}}}}},
     "response_format.json_schema.schema", "invalid_value"),
])
def test_wrong_types_and_values_are_400_with_param(gemma_server, extra, param, code):
    assert_openai_error(post(gemma_server, "/chat/completions", chat_body(gemma_server, **extra)),
                        400, param, code)


def test_openai_client_raises_bad_request(gemma_server):
    c = openai.OpenAI(base_url=gemma_server.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=gemma_server.model_id, n=2,
                                  messages=[{"role": "user", "content": "Hi"}])
    assert e.value.status_code == 400 and e.value.body["param"] == "n"


def test_unknown_fields_are_ignored(gemma_server):
    r = post(gemma_server, "/chat/completions",
             chat_body(gemma_server, user="u1", metadata={"k": "v"}, store=False,
                       some_future_field={"x": [1, 2]}))
    assert r.status_code == 200, r.text


def test_unknown_route_and_model_id_are_404(gemma_server):
    # (A completion request's "model" may be any name: see test_serve_defaults.py.)
    assert_openai_error(requests.get(gemma_server.url + "/v1/nothing", timeout=10), 404)
    assert_openai_error(requests.get(gemma_server.url + "/v1/models/nope", timeout=10), 404,
                        code="model_not_found")


def test_ten_megabyte_body_is_413(gemma_server):
    big = json.dumps({"model": gemma_server.model_id,
                      "messages": [{"role": "user", "content": "x" * (10 << 20)}]})
    assert_openai_error(post(gemma_server, "/chat/completions", big), 413, code="request_too_large")
    # The server is fine afterwards.
    assert post(gemma_server, "/chat/completions", chat_body(gemma_server)).status_code == 200


def test_health_and_metrics(gemma_server):
    h = requests.get(gemma_server.url + "/health", timeout=10)
    assert h.status_code == 200 and h.json()["status"] == "ok"
    # A request of our own that gets a 400, so the counter below does not depend on test order.
    bad = requests.post(gemma_server.url + "/v1/chat/completions", data="{not json",
                        headers={"Content-Type": "application/json"}, timeout=10)
    assert bad.status_code == 400
    m = gemma_server.metrics()
    for name in ("geniex_engine_steps_total", "geniex_kv_resident_bytes",
                 "geniex_kv_blocks_in_use", "geniex_engine_active_sequences"):
        assert name in m, name
    for name in ("geniex_prompt_tokens_total", "geniex_generated_tokens_total",
                 "geniex_requests_in_flight", "geniex_requests_queued",
                 "geniex_generation_tokens_per_second", "geniex_parallel_slots"):
        assert name in m, name
    assert any(k.startswith('geniex_requests_total{route="/v1/chat/completions",status="400"}')
               for k in m)


@pytest.fixture(scope="module")
def keyed_server(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "1", "--queue", "0",
                       api_key="sekret-123")
    yield srv
    assert srv.stop() == 0


def test_api_key_401(keyed_server):
    url = keyed_server.base_url + "/models"
    assert_openai_error(requests.get(url, timeout=10), 401, code="invalid_api_key")
    assert_openai_error(requests.get(url, headers={"Authorization": "Bearer wrong"}, timeout=10), 401)
    assert_openai_error(requests.get(url, headers={"Authorization": "sekret-123"}, timeout=10), 401)
    assert requests.get(url, headers=keyed_server.headers(), timeout=10).status_code == 200
    assert requests.get(keyed_server.url + "/health", timeout=10).status_code == 200  # open
    assert requests.get(keyed_server.url + "/metrics", timeout=10).status_code == 401
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=keyed_server.base_url, api_key="bad", max_retries=0).models.list()
    c = openai.OpenAI(base_url=keyed_server.base_url, api_key="sekret-123", max_retries=0)
    assert c.models.list().data[0].id == keyed_server.model_id


def open_stream(srv, max_tokens=2000):
    """Starts a long streamed completion; returns the response after its first content chunk."""
    r = requests.post(srv.base_url + "/completions", stream=True, timeout=60, headers=srv.headers(),
                      json={"model": srv.model_id, "prompt": COUNTING, "max_tokens": max_tokens,
                            "temperature": 0, "stream": True})
    assert r.status_code == 200, r.text
    lines = r.iter_lines()
    for line in lines:
        if line.startswith(b"data: {"):
            break
    return r, lines


def test_queue_full_is_429_immediately(keyed_server):
    # --parallel 1 --queue 0: one long stream holds the only slot.
    r, _ = open_stream(keyed_server)
    try:
        t0 = time.monotonic()
        c = openai.OpenAI(base_url=keyed_server.base_url, api_key="sekret-123", max_retries=0)
        with pytest.raises(openai.RateLimitError) as e:
            c.chat.completions.create(model=keyed_server.model_id, max_tokens=2,
                                      messages=[{"role": "user", "content": "Hi"}])
        assert time.monotonic() - t0 < 2.0, "429 must not wait for the slot"
        assert e.value.status_code == 429 and e.value.body["code"] == "server_busy"
        assert keyed_server.metrics()["geniex_requests_in_flight"] == 1
    finally:
        r.close()
    keyed_server.wait_idle()


def test_client_disconnect_mid_stream_frees_the_slot(gemma_server):
    before = gemma_server.metrics()["geniex_requests_cancelled_total"]
    r, lines = open_stream(gemma_server)
    for _ in range(3):
        next(lines)
    r.close()  # hang up mid-stream
    m = gemma_server.wait_idle(timeout=10)
    assert m["geniex_requests_cancelled_total"] == before + 1
    # The slot is usable again at once.
    assert post(gemma_server, "/chat/completions", chat_body(gemma_server)).status_code == 200


def test_raw_socket_hangup_before_reading(gemma_server):
    """A client that sends a streamed request and vanishes without reading anything."""
    body = json.dumps({"model": gemma_server.model_id, "prompt": COUNTING, "max_tokens": 2000,
                       "stream": True}).encode()
    host, port = gemma_server.url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()  # RST
    gemma_server.wait_idle(timeout=15)


def test_http_1_0_stream_ends_with_the_connection(gemma_server):
    """HTTP/1.0 has no chunks: a stream to such a client is the raw events, then a close."""
    body = json.dumps({"model": gemma_server.model_id, "prompt": COUNTING, "max_tokens": 3,
                       "stream": True}).encode()
    host, port = gemma_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.settimeout(30)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, events = raw.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0] and b"chunked" not in head.lower(), head
    assert events.startswith(b"data: {") and events.endswith(b"data: [DONE]\n\n"), events[-80:]


def test_sigterm_finishes_in_flight_then_exits_0(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "1", "--queue", "2",
                       "--shutdown-timeout", "1")
    r, lines = open_stream(srv)  # a generation that would run for a minute
    queued = {}

    def waiter():
        queued["r"] = requests.post(srv.base_url + "/chat/completions", timeout=30,
                                    json=chat_body(srv))
    t = threading.Thread(target=waiter)
    t.start()
    deadline = time.monotonic() + 10
    while srv.metrics()["geniex_requests_queued"] < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    rest = [line for line in lines if line]  # the stream ends: cancelled after the grace period
    rc = srv.proc.wait(timeout=15)
    elapsed = time.monotonic() - t0
    t.join(timeout=10)
    assert rc == 0
    assert elapsed < 5.0, f"shutdown took {elapsed:.1f}s with a 1 s grace period"
    assert rest[-1] == b"data: [DONE]"
    assert queued["r"].status_code == 503
    assert queued["r"].json()["error"]["code"] == "shutting_down"
    r.close()


def test_idle_keep_alive_connection_does_not_hold_shutdown(geniex_bin, gemma_gguf):
    # A client that keeps its connection open between requests (requests.Session, the openai
    # client's pool, a browser): the server must still exit soon after SIGTERM (shutdown closes
    # connections that wait for a request), not after the client's patience.
    srv = start_server(geniex_bin, gemma_gguf, "--shutdown-timeout", "1")
    with requests.Session() as s:
        assert s.get(srv.url + "/health", timeout=10).status_code == 200  # connection kept alive
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=15) == 0
        elapsed = time.monotonic() - t0
    assert elapsed < 4.0, f"an idle keep-alive connection held shutdown for {elapsed:.1f}s"


def test_sigint_idle_server_exits_0_quickly(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf)
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGINT)
    assert srv.proc.wait(timeout=10) == 0
    assert time.monotonic() - t0 < 2.0
