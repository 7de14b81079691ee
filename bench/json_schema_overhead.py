#!/usr/bin/env python3
"""Decode speed with and without a JSON Schema (constrained sampling), same model, alternating.

`geniex run --json` twice per round on Gemma 3 270M (greedy, 2 threads): an answer held to a
schema (an array of at least --items short strings: it does not finish within -n tokens), then
free text of the same number of tokens with --ignore-eos. Reports the medians of generation
tok/s and their ratio (schema / free; the issue's goal is >= 0.9).

  python3 bench/json_schema_overhead.py [--model GGUF] [--rounds 3] [-n 128]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]


def run(geniex, model, extra):
    out = subprocess.run([geniex, "run", "-m", model, "--temp", "0", "-t", "2", "--json", *extra],
                         check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    return d["timings"]["generation_tokens_per_second"], d["timings"]["generated_tokens"], d["text"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--geniex", default=str(REPO / "build/release/tools/geniex"))
    ap.add_argument("--model", default=str(pathlib.Path.home() /
                                          ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("-n", type=int, default=128)
    a = ap.parse_args()
    schema = {"type": "array", "items": {"type": "string", "maxLength": 24},
              "minItems": a.items}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(schema, f)
    prompt = f"List {a.items} animals."
    free, constrained, n_c = [], [], []
    for r in range(a.rounds):
        tps_c, n, _ = run(a.geniex, a.model, ["--json-schema", f.name, "-n", str(a.n), "-p", prompt])
        constrained.append(tps_c)
        n_c.append(n)
        tps_f, _, _ = run(a.geniex, a.model, ["-n", str(n), "--ignore-eos", "-p", prompt])
        free.append(tps_f)
        print(f"round {r + 1}: free {tps_f:.1f} tok/s, schema {tps_c:.1f} tok/s ({n} tokens)")
    mf, mc = statistics.median(free), statistics.median(constrained)
    print(f"\n| | free text | json_schema | ratio |\n|---|--:|--:|--:|\n"
          f"| decode tok/s (median, ~{int(statistics.median(n_c))} tokens) | {mf:.1f} | {mc:.1f} "
          f"| {mc / mf:.2f} |")


if __name__ == "__main__":
    main()
