#!/usr/bin/env python3
"""Greedy continuations of ten ordinary prompts: `geniex run --raw --temp 0` against llama.cpp's
`llama-simple` (default settings) on the same GGUF. A symptom, not a target: numerics are judged
by KL divergence (bench/fidelity.py); this shows what a user comparing the two tools sees.

  .venv/bin/python bench/greedy_vs_llamacpp.py [-m MODEL] [-n 32] [--geniex-args ...]
"""
import argparse
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = pathlib.Path(os.path.expanduser("~/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf"))

PROMPTS = [
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "La cuisine française est célèbre dans le monde entier parce que",
    "To make a simple tomato soup, you will need the following ingredients:",
    "Dear Mr. Thompson,\n\nI am writing to inform you that",
    "The three laws of thermodynamics can be summarised as follows.",
    "In 1969, the Apollo 11 mission",
    "Here is a short poem about autumn leaves:\n",
    "The best way to learn a new programming language is",
    "SELECT name, email FROM users WHERE",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", type=pathlib.Path, default=DEFAULT_MODEL)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--geniex", type=pathlib.Path, default=REPO / "build/release/tools/geniex")
    ap.add_argument("--geniex-args", nargs="*", default=[])
    a = ap.parse_args()
    bindir = pathlib.Path(os.environ.get("GENIEX_LLAMACPP_BIN") or subprocess.run(
        ["bash", str(REPO / "scripts/build_llamacpp.sh"), "--print-dir"], capture_output=True, text=True,
        check=True).stdout.strip())
    same = 0
    for p in PROMPTS:
        r = subprocess.run([str(bindir / "llama-simple"), "-m", str(a.model), "-n", str(a.n), p],
                           capture_output=True, text=True, check=True)
        theirs = r.stdout
        theirs = theirs[len("<bos>"):] if theirs.startswith("<bos>") else theirs
        assert theirs.startswith(p), theirs[:200]
        theirs = theirs[len(p):].removesuffix("\n")
        r = subprocess.run([str(a.geniex), "run", "-m", str(a.model), "--raw", "--temp", "0", "-n", str(a.n),
                            "-p", p, *a.geniex_args], capture_output=True, text=True, check=True)
        ours = r.stdout.removesuffix("\n")
        k = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), min(len(ours), len(theirs)))
        ok = ours == theirs
        same += ok
        print(f"{'same' if ok else f'parts at char {k}':>18} | {p[:40]!r}")
        if not ok:
            print(f"{'':>18} |   ours:   {ours[max(0, k - 20):k + 40]!r}\n{'':>18} |   theirs: {theirs[max(0, k - 20):k + 40]!r}")
    print(f"\n{same}/{len(PROMPTS)} continuations identical ({a.n} tokens, greedy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
