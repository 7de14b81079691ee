#!/usr/bin/env python3
"""Quantization time and peak RSS: `geniex quantize` vs llama.cpp's `llama-quantize` on the same
F16 model, same type, same thread count; runs alternate (ours, theirs, ours, ...) and the medians
are compared. Also checks that both outputs are byte-identical.

  .venv/bin/python bench/quantize_vs_llamacpp.py [--model F16.gguf] [--type Q4_K_M] [--threads 2]
                                                 [--runs 3]

The default model is the random-weight Llama 3.2 1B shape (bench/make_shape_models.py); it is
written to ~/.cache/geniex/bench-models/llama-3.2-1b-f16.gguf when missing (needs numpy + gguf).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
MODELS = pathlib.Path(os.environ.get("GENIEX_BENCH_MODELS", pathlib.Path.home() / ".cache/geniex/bench-models"))


def llamacpp_bin() -> pathlib.Path:
    d = os.environ.get("GENIEX_LLAMACPP_BIN") or subprocess.run(
        ["bash", str(REPO / "scripts/build_llamacpp.sh"), "--print-dir"],
        capture_output=True, text=True, check=True).stdout.strip()
    return pathlib.Path(d)


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return secs, ru.ru_maxrss * 1024


def digest(p: pathlib.Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=pathlib.Path, default=MODELS / "llama-3.2-1b-f16.gguf")
    ap.add_argument("--type", default="Q4_K_M")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--geniex", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("GENIEX_BUILD_DIR", REPO / "build/release")) / "tools/geniex")
    a = ap.parse_args()
    if not a.model.exists():
        sys.path.insert(0, str(REPO / "bench"))
        import make_shape_models  # noqa: E402

        a.model.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing {a.model}", flush=True)
        make_shape_models.write_f16("llama-3.2-1b", a.model, 1234)
    quantize = llamacpp_bin() / "llama-quantize"
    with tempfile.TemporaryDirectory(dir=a.model.parent) as tmp:
        ours_out, ref_out = pathlib.Path(tmp) / "ours.gguf", pathlib.Path(tmp) / "ref.gguf"
        ours_cmd = [str(a.geniex), "quantize", str(a.model), str(ours_out), a.type, "-t", str(a.threads)]
        ref_cmd = [str(quantize), str(a.model), str(ref_out), a.type, str(a.threads)]
        ours, ref = [], []
        for i in range(a.runs):
            ours.append(timed(ours_cmd))
            ref.append(timed(ref_cmd))
            print(f"run {i + 1}: geniex {ours[-1][0]:.2f} s, llama-quantize {ref[-1][0]:.2f} s", flush=True)
        same = digest(ours_out) == digest(ref_out)
    mo = statistics.median(t for t, _ in ours)
    mr = statistics.median(t for t, _ in ref)
    ro = max(r for _, r in ours)
    rr = max(r for _, r in ref)
    print(f"\n{a.model.name} -> {a.type}, {a.threads} threads, {a.runs} alternating runs (median)")
    print("| tool | time (s) | peak RSS (MiB) |")
    print("|---|---|---|")
    print(f"| geniex quantize | {mo:.2f} | {ro / 2**20:.0f} |")
    print(f"| llama-quantize | {mr:.2f} | {rr / 2**20:.0f} |")
    print(f"speed-up {mr / mo:.2f}x; outputs byte-identical: {same}")


if __name__ == "__main__":
    main()
