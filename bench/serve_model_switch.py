#!/usr/bin/env python3
"""Time to first token on `geniex serve` with several models: for a model already loaded, and
for one that must be loaded first (its first request after another model took its place under
--max-loaded). Alternating rounds, medians.

  python3 bench/serve_model_switch.py [--rounds 5] [--models A.gguf B.gguf] [-t 2]

Default models: Gemma 3 270M Q4_K_M (the default, loaded at start) and, from
~/.cache/geniex/bench-models (bench/make_shape_models.py), lfm2-350m-q4_0 and lfm2-350m-q8_0
(random weights, real shapes) as the two that take turns. Server: --max-loaded 2, so each switch
between the two unloads the other."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = pathlib.Path.home() / ".cache/geniex/bench-models"
GEMMA = pathlib.Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"


def ttft(url: str, model: str) -> float:
    body = json.dumps({"model": model, "prompt": "The capital of France is", "max_tokens": 4,
                       "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            if line.startswith(b"data: ") and b'"text"' in line:
                got = time.perf_counter() - t0
                r.read()
                return got * 1000
    raise RuntimeError("no token")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--models", nargs=2, type=pathlib.Path,
                    default=[BENCH / "lfm2-350m-q4_0.gguf", BENCH / "lfm2-350m-q8_0.gguf"])
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--geniex", default=str(ROOT / "build/release/tools/geniex"))
    a = ap.parse_args()
    d = pathlib.Path(tempfile.mkdtemp())
    try:
        for m in a.models:
            os.symlink(m.resolve(), d / m.name)
        cmd = [a.geniex, "serve", "-m", str(GEMMA), "--model-dir", str(d), "--max-loaded", "2",
               "--port", "0", "-t", str(a.threads), "-c", "512", "--no-access-log"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = re.search(r"listening on (\S+)", p.stdout.readline()).group(1)
        ids = [m.stem for m in a.models]
        cold, warm = [], []
        ttft(url, ids[0])  # first load outside the timing
        for _ in range(a.rounds):
            for mid in (ids[1], ids[0]):
                cold.append(ttft(url, mid))  # the other one was loaded: this one loads now
                warm.append(ttft(url, mid))  # loaded
        p.terminate()
        p.wait(timeout=30)
        sizes = [m.stat().st_size / 2**20 for m in a.models]
        print(f"| models | size MiB | TTFT loaded (ms) | TTFT with load (ms) | load cost (ms) |")
        print(f"|---|---|---|---|---|")
        print(f"| {ids[0]} / {ids[1]} | {sizes[0]:.0f} / {sizes[1]:.0f} | "
              f"{statistics.median(warm):.1f} | {statistics.median(cold):.1f} | "
              f"{statistics.median(cold) - statistics.median(warm):.1f} |")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
