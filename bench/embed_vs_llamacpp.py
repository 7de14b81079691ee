#!/usr/bin/env python3
"""GenieX vs llama.cpp: embeddings throughput (inputs/s) of the OpenAI-compatible servers on the
same GGUF, side by side.

Starts `geniex serve` and llama.cpp's `llama-server --embedding` (same model, same threads, both
pooling by the mean unless --pooling says otherwise) and alternates rounds: one POST
/v1/embeddings with a batch of --batch short texts to ours, then the same to theirs, ... (after one
warm-up request each). Reports per server the median request time over the rounds and inputs/s
= batch / median; ratio = ours / theirs in inputs/s (> 1: GenieX is faster). Both answer unit-length
float vectors; the script also checks they agree (cosine per input).

llama-server: built by scripts/build_llamacpp.sh, run with OMP_WAIT_POLICY=passive (its OpenMP
workers otherwise spin, which costs it 4-5x on a shared, loaded host). Its slots: --np (default 1:
with more slots its Gemma 3 vectors stop agreeing with ours and transformers' (min cosine 0.72 at
8 or 32 slots, 0.999 with one), and it was not faster: 3.3 vs 2.9 inputs/s).

  python3 bench/embed_vs_llamacpp.py [-m GGUF] [--threads 2] [--batch 32] [--rounds 7] [--np 1]
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import time

import requests

REPO = pathlib.Path(__file__).resolve().parents[1]
HOME = pathlib.Path.home()
LLAMA_BIN = HOME / ".cache/geniex-goldens/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin"
DEFAULT_MODEL = HOME / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"

WORDS = ("river mountain city garden engine music window forest market ocean planet library "
         "winter summer bridge castle doctor teacher kitchen school").split()


def texts(n: int) -> list[str]:
    """n short texts (5-12 words), fixed."""
    out = []
    for i in range(n):
        k = 5 + (i * 7) % 8
        out.append(" ".join(WORDS[(i * 3 + j * 5) % len(WORDS)] for j in range(k)).capitalize() + ".")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode}")
        try:
            if requests.get(url + "/health", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    sys.exit(f"{what} never became healthy")


def start_ours(geniex: str, model: str, threads: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([geniex, "serve", "-m", model, "--port", "0", "-t", str(threads),
                             "-c", "2048"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    m = re.search(r"listening on (http://\S+)", proc.stdout.readline())
    if not m:
        sys.exit("geniex serve did not start")
    wait_healthy(m.group(1), proc, "geniex serve")
    return proc, m.group(1)


def start_theirs(model: str, threads: int, n_parallel: int, pooling: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [str(LLAMA_BIN / "llama-server"), "-m", model, "--embedding", "--pooling", pooling,
           "-t", str(threads), "-tb", str(threads), "-c", "2048", "-b", "2048", "-ub", "2048",
           "-np", str(n_parallel), "--host", "127.0.0.1", "--port", str(port)]
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc, "llama-server")
    return proc, url


def request(url: str, model: str, batch: list[str]) -> tuple[float, list[list[float]]]:
    t0 = time.perf_counter()
    r = requests.post(url + "/v1/embeddings", json={"model": model, "input": batch,
                                                    "encoding_format": "float"}, timeout=600)
    dt = time.perf_counter() - t0
    if r.status_code != 200:
        sys.exit(f"{url}: {r.status_code} {r.text[:500]}")
    data = sorted(r.json()["data"], key=lambda d: d["index"])
    return dt, [d["embedding"] for d in data]


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--geniex", default=str(REPO / "build/release/tools/geniex"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--np", type=int, default=1, help="llama-server slots")
    ap.add_argument("--pooling", default="mean", help="llama-server --pooling (ours: the GGUF's, "
                    "mean when it declares none)")
    a = ap.parse_args()
    batch = texts(a.batch)
    ours_p, ours_url = start_ours(a.geniex, a.model, a.threads)
    theirs_p, theirs_url = start_theirs(a.model, a.threads, a.np, a.pooling)
    try:
        _, ov = request(ours_url, "m", batch)  # warm-up (graphs, weight repacking)
        _, tv = request(theirs_url, "m", batch)
        agree = min(cosine(x, y) for x, y in zip(ov, tv))
        ours_t, theirs_t = [], []
        for _ in range(a.rounds):
            ours_t.append(request(ours_url, "m", batch)[0])
            theirs_t.append(request(theirs_url, "m", batch)[0])
    finally:
        for p in (ours_p, theirs_p):
            p.terminate()
            p.wait(timeout=30)
    mo, mt = statistics.median(ours_t), statistics.median(theirs_t)
    print(f"model {pathlib.Path(a.model).name}, {a.batch} texts per request, {a.threads} threads, "
          f"{a.rounds} alternating rounds; min cosine ours vs llama.cpp {agree:.5f}")
    print(f"geniex serve : median {mo * 1000:8.1f} ms  {a.batch / mo:8.1f} inputs/s  "
          f"(samples ms: {', '.join(f'{t * 1000:.0f}' for t in ours_t)})")
    print(f"llama-server : median {mt * 1000:8.1f} ms  {a.batch / mt:8.1f} inputs/s  "
          f"(samples ms: {', '.join(f'{t * 1000:.0f}' for t in theirs_t)})")
    print(f"ratio (ours / llama.cpp, inputs/s): {mt / mo:.2f}x")


if __name__ == "__main__":
    main()
