"""A bounded soak of `geniex serve` on the real model: many clients at once (streamed and whole
requests, malformed bodies, clients that hang up mid-stream or before reading, tool calls, JSON
schema replies and embeddings mixed in) for a fixed time.
Afterwards: no crash, no 5xx, metrics back to idle, the server still answers, RSS growth bounded,
and the access log (read as it is written, so the pipe never fills) has one well-formed line per
answered request and none of the content.

GENIEX_SOAK_SECONDS (default 20) and GENIEX_SOAK_CLIENTS (default 32) make longer manual runs,
e.g. GENIEX_SOAK_SECONDS=300 GENIEX_SOAK_CLIENTS=64 pytest tests/python/test_serve_soak.py
"""
from __future__ import annotations

import collections
import json
import os
import random
import socket
import threading
import time

import re

import psutil
import requests

from conftest import start_server

SOAK_SECONDS = float(os.environ.get("GENIEX_SOAK_SECONDS", "20"))
SOAK_CLIENTS = int(os.environ.get("GENIEX_SOAK_CLIENTS", "32"))
# RSS may grow while allocators warm up; beyond this after the first third of the run is a leak.
RSS_GROWTH_LIMIT_MB = 64
PROMPTS = ["Name a color.", "1, 2, 3,", "Write a haiku about rain.", "What is 2+2?"]
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string", "maxLength": 20}}, "required": ["q"]}}}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def client_loop(srv, seed, deadline, stats, errors):
    rnd = random.Random(seed)
    host, port = srv.url.removeprefix("http://").split(":")
    s = requests.Session()
    while time.monotonic() < deadline:
        kind = rnd.choices(["stream", "whole", "malformed", "hangup", "info", "embed"],
                           [4, 3, 1, 1, 1, 1])[0]
        body = {"model": srv.model_id, "max_tokens": rnd.randint(1, 16),
                "temperature": rnd.choice([0, 0.8]), "seed": rnd.randint(0, 1000)}
        extra = rnd.choice([None, None, "tools", "schema"])  # agent features mixed in (chat)
        if extra == "tools":
            body["messages"] = [{"role": "user", "content": rnd.choice(PROMPTS)}]
            body["tools"] = [TOOL]
            body["tool_choice"] = rnd.choice(["auto", "required"])
            body["max_tokens"] = rnd.randint(4, 48)
            path = "/chat/completions"
        elif extra == "schema":
            body["messages"] = [{"role": "user", "content": rnd.choice(PROMPTS)}]
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "n", "schema": SCHEMA}}
            path = "/chat/completions"
        elif rnd.random() < 0.5:
            body["messages"] = [{"role": "user", "content": rnd.choice(PROMPTS)}]
            path = "/chat/completions"
        else:
            body["prompt"] = rnd.choice(PROMPTS)
            path = "/completions"
        try:
            if kind == "stream":
                body["stream"] = True
                r = s.post(srv.base_url + path, json=body, stream=True, timeout=60)
                if r.status_code == 200:
                    cut = rnd.choice([None, 1, 2, 4])  # None: read to the end
                    n = 0
                    for line in r.iter_lines():
                        n += 1
                        if cut is not None and n >= cut:
                            break
                    r.close()
                    stats["stream_cut" if cut else "stream_full"] += 1
                else:
                    r.close()
                    stats[r.status_code] += 1
                    if r.status_code != 429:
                        errors.append(f"stream {r.status_code}")
            elif kind == "whole":
                r = s.post(srv.base_url + path, json=body, timeout=60)
                stats[r.status_code] += 1
                if r.status_code not in (200, 429):
                    errors.append(f"whole {r.status_code}: {r.text[:200]}")
            elif kind == "malformed":
                r = s.post(srv.base_url + path, data=json.dumps(body)[: rnd.randint(0, 20)],
                           timeout=60)
                stats[r.status_code] += 1
                if r.status_code != 400:
                    errors.append(f"malformed {r.status_code}")
            elif kind == "hangup":
                body["stream"] = True
                raw = json.dumps(body).encode()
                sock = socket.create_connection((host, int(port)), timeout=10)
                sock.sendall(b"POST /v1" + path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
                             b"Content-Type: application/json\r\nContent-Length: "
                             + str(len(raw)).encode() + b"\r\n\r\n" + raw)
                time.sleep(rnd.random() * 0.3)
                sock.close()
                stats["hangup"] += 1
            elif kind == "embed":
                r = s.post(srv.base_url + "/embeddings", timeout=60,
                           json={"model": srv.model_id,
                                 "input": rnd.sample(PROMPTS, rnd.randint(1, len(PROMPTS)))})
                stats[r.status_code] += 1
                if r.status_code not in (200, 429):
                    errors.append(f"embed {r.status_code}: {r.text[:200]}")
            else:
                r = s.get(srv.url + rnd.choice(["/health", "/metrics", "/v1/models"]), timeout=30)
                stats[r.status_code] += 1
                if r.status_code != 200:
                    errors.append(f"info {r.status_code}")
        except requests.RequestException as e:
            errors.append(f"{kind}: {type(e).__name__}: {e}")
        time.sleep(rnd.random() * 0.1)


def test_soak_many_clients_with_disconnects(geniex_bin, gemma_gguf):
    # Every client shares one address here: each keeps a connection and hang-ups add more.
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "4", "--queue", "16",
                       "--max-conns-per-client", str(max(64, 2 * SOAK_CLIENTS + 16)))
    try:
        proc = psutil.Process(srv.proc.pid)
        stats: collections.Counter = collections.Counter()
        errors: list[str] = []
        t0 = time.monotonic()
        deadline = t0 + SOAK_SECONDS
        threads = [threading.Thread(target=client_loop, args=(srv, i, deadline, stats, errors))
                   for i in range(SOAK_CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(SOAK_SECONDS / 3)
        rss_warm = proc.memory_info().rss
        for t in threads:
            t.join(timeout=SOAK_SECONDS + 120)
        assert not any(t.is_alive() for t in threads), "a client hung"
        assert srv.proc.poll() is None, "the server died"
        assert not errors, f"{len(errors)} unexpected outcomes, first: {errors[:5]}"
        m = srv.wait_idle(timeout=30)
        assert stats[200] + stats["stream_full"] + stats["stream_cut"] > 10, stats
        rss_end = proc.memory_info().rss
        growth_mb = (rss_end - rss_warm) / 2**20
        print(f"soak {SOAK_SECONDS:.0f}s x {SOAK_CLIENTS} clients: {dict(stats)}; "
              f"generated {m['geniex_generated_tokens_total']:.0f} tokens; "
              f"RSS {rss_warm / 2**20:.0f} -> {rss_end / 2**20:.0f} MiB")
        assert growth_mb < RSS_GROWTH_LIMIT_MB, f"RSS grew {growth_mb:.0f} MiB"
        # Still serving.
        r = requests.post(srv.base_url + "/completions", timeout=60,
                          json={"model": srv.model_id, "prompt": "Hello", "max_tokens": 2})
        assert r.status_code == 200
    finally:
        assert srv.stop() == 0
    err_lines = srv.stderr_lines()
    access = [ln for ln in err_lines if " access: " in ln]
    fmt = re.compile(r"geniex serve: access: (GET|POST) \S+ \d{3} in=(\d+|-) out=(\d+|-) "
                     r"ms=(\d+\.\d|-)( client-closed)?\n")
    assert all(fmt.fullmatch(ln) for ln in access), [ln for ln in access if not fmt.fullmatch(ln)][:3]
    answered = sum(v for k, v in stats.items() if isinstance(k, int))
    assert len(access) >= answered, (len(access), answered)
    assert not any(p in "".join(err_lines) for p in PROMPTS)
