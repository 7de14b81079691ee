#!/usr/bin/env python3
"""Load test of `geniex serve`: aggregate generated tok/s and TTFT at several concurrencies.

    .venv/bin/python bench/serve_load.py [--geniex build/release/tools/geniex] [-m MODEL]
        [--url http://127.0.0.1:18181] [--streams 1 4 8 16] [--requests 3] [--max-tokens 64]
        [--threads 2] [--json out.json]

Without --url it starts `geniex serve --port 0 --parallel S --queue S` (S = the largest
concurrency) and stops it at the end. Each of C clients sends --requests streamed completions
one after another (a counting prompt, temperature 0, so every request generates exactly
--max-tokens tokens). Per level: aggregate tok/s = all generated tokens / wall time of the
level; TTFT = request sent -> first content chunk (includes waiting for a slot and prefill);
p50/p99 over every request of the level. Speed is reported, never asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

import requests

REPO = pathlib.Path(__file__).resolve().parents[1]


def start_server(args, slots):
    model = args.model or os.environ.get("GENIEX_MODEL") or str(
        pathlib.Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf")
    cmd = [args.geniex, "serve", "-m", model, "--port", "0", "-t", str(args.threads),
           "--parallel", str(slots), "--queue", str(slots)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://\S+)", line)
    if not m:
        proc.kill()
        sys.exit(f"serve_load: server did not start: {line!r}")
    return proc, m.group(1)


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def one_request(url, model, start, max_tokens):
    prompt = ", ".join(str(start + i) for i in range(8)) + ","
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    ttft = None
    tokens = 0
    with requests.post(url + "/v1/completions", json=body, stream=True, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if not line.startswith(b"data: {"):
                continue
            j = json.loads(line[6:])
            if j.get("usage"):
                tokens = j["usage"]["completion_tokens"]
            if ttft is None and j["choices"] and j["choices"][0].get("text"):
                ttft = time.perf_counter() - t0
    return ttft, tokens, time.perf_counter() - t0


def run_level(url, model, clients, requests_per_client, max_tokens):
    results = []
    lock = threading.Lock()

    def client(ci):
        for k in range(requests_per_client):
            res = one_request(url, model, 1 + 37 * (ci * requests_per_client + k), max_tokens)
            with lock:
                results.append(res)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttfts = [r[0] for r in results if r[0] is not None]
    tokens = sum(r[1] for r in results)
    return {"streams": clients, "requests": len(results), "generated_tokens": tokens,
            "wall_s": wall, "aggregate_tok_s": tokens / wall,
            "ttft_p50_ms": 1000 * percentile(ttfts, 0.5),
            "ttft_p99_ms": 1000 * percentile(ttfts, 0.99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--geniex", default=str(REPO / "build/release/tools/geniex"))
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("--url", default=None, help="use a running server instead of starting one")
    ap.add_argument("--streams", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--requests", type=int, default=3, help="requests per client per level")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    proc = None
    url = args.url
    if url is None:
        proc, url = start_server(args, max(args.streams))
    try:
        for _ in range(100):
            try:
                if requests.get(url + "/health", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.1)
        model = requests.get(url + "/v1/models", timeout=10).json()["data"][0]["id"]
        one_request(url, model, 1000, 8)  # warm-up
        rows = [run_level(url, model, c, args.requests, args.max_tokens) for c in args.streams]
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    base = rows[0]["aggregate_tok_s"]
    print(f"model {model}, {args.max_tokens} tokens per request, {args.requests} requests per "
          f"stream, server threads {args.threads}")
    print("| streams | requests | generated tok/s (aggregate) | vs 1 stream | TTFT p50 ms | TTFT p99 ms |")
    print("|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['streams']} | {r['requests']} | {r['aggregate_tok_s']:.1f} | "
              f"{r['aggregate_tok_s'] / base:.2f}x | {r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
