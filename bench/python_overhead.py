#!/usr/bin/env python3
"""Overhead of the Python layer: decode tok/s through geniex.transformers' generate() and the
native geniex.Model against `geniex bench` (tg) on the same model, threads and token count.

  PYTHONPATH=build/release/python .venv/bin/python bench/python_overhead.py \
      [-m MODEL] [-t 2] [-n 128] [-r 5]

Decode speed from Python is (n - 1) / (time(n new tokens) - time(1 new token)) from the same
prompt, so prefill and the first token's latency cancel out. The three run alternately, -r times
each (`geniex bench -r 1` per round, in its own process); medians.
Prints one JSON object with the three speeds and the ratios to `geniex bench`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"
PROMPT = "1, 2, 3, 4, 5,"  # Gemma 3 270M counts on for hundreds of tokens (no early EOG)


def bench_cli(model: str, threads: int, n: int, reps: int) -> float:
    cli = REPO / "build/release/tools/geniex"
    r = subprocess.run([str(cli), "bench", "-m", model, "-t", str(threads), "-p", "0", "-n",
                        str(n), "-r", str(reps), "--json"], capture_output=True, text=True,
                       check=True)
    return float(json.loads(r.stdout)["tg"]["median_tok_s"])


def decode_tps(run, n: int) -> float:
    t0 = time.perf_counter()
    got1 = run(1)
    t1 = time.perf_counter()
    got = run(n)
    t2 = time.perf_counter()
    if got != n or got1 != 1:
        raise SystemExit(f"generated {got} tokens, wanted {n}: pick another prompt")
    return (n - 1) / ((t2 - t1) - (t1 - t0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default=os.environ.get("GENIEX_MODEL", str(DEFAULT_MODEL)))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=5)
    args = ap.parse_args()

    import geniex
    from geniex.transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    hf = AutoModelForCausalLM.from_pretrained(args.model, device_map="cpu",
                                              n_threads=args.threads)
    ids = tok(PROMPT, return_tensors="np").input_ids

    def run_hf(n: int) -> int:
        return hf.generate(ids, max_new_tokens=n).shape[1] - ids.shape[1]

    native = geniex.load(args.model, device="cpu", n_threads=args.threads)

    def run_native(n: int) -> int:
        native.reset()  # no prefix reuse: each call prefills like the first
        return len(native.generate(PROMPT, max_tokens=n, temperature=0, ignore_eos=True).tokens)

    run_hf(1)  # warm-up
    run_native(1)
    # Alternating runs, so load from elsewhere hits the three alike; medians.
    cli, nat, trf = [], [], []
    for _ in range(args.reps):
        cli.append(bench_cli(args.model, args.threads, args.n_gen, 1))
        nat.append(decode_tps(run_native, args.n_gen))
        trf.append(decode_tps(run_hf, args.n_gen))
    cli_tps, native_tps, hf_tps = (statistics.median(v) for v in (cli, nat, trf))
    print(json.dumps({
        "model": Path(args.model).name, "threads": args.threads, "n_gen": args.n_gen,
        "geniex_bench_tg": round(cli_tps, 2), "python_native": round(native_tps, 2),
        "python_transformers": round(hf_tps, 2),
        "native_vs_bench": round(native_tps / cli_tps, 3),
        "transformers_vs_bench": round(hf_tps / cli_tps, 3)}))


if __name__ == "__main__":
    sys.exit(main())
