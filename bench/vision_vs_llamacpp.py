#!/usr/bin/env python3
"""GenieX vs llama.cpp: LFM2-VL image encoding time on the same files, side by side.

Alternates rounds: `geniex bench --image IMG --json` (ours: decode + preprocess + SigLIP2 encoder
+ projector, median of --reps), then llama.cpp's `llama-mtmd-cli` on the same text model, mmproj
and image (theirs: its "mtmd batch encoding done in N ms", the time of `mtmd_batch_encode`:
encoder + projector only — its image decoding and preprocessing run earlier, in
`mtmd_helper_bitmap_init_from_file` and `mtmd_tokenize`; one image per process run), then ours
again, ... The ratio is theirs / ours of the medians over all samples (> 1: GenieX is faster),
on the same work: our encoder + projector (encode minus decode + preprocess). Our time with
decoding and preprocessing is printed too. Also reports our prefill of the image prompt and
TTFT.

Models: bench/make_vl_shape_models.py (random weights with LFM2-VL-450M's shapes; timing only).
llama-mtmd-cli: `scripts/build_llamacpp.sh --bench` (from the llama-cpp-python sdist's llama.cpp).

  python3 bench/vision_vs_llamacpp.py [--image tests/data/vision/astronaut.png] [--threads 2]
      [--rounds 3] [--reps 1]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]
HOME = pathlib.Path.home()
MODELS = pathlib.Path(os.environ.get("GENIEX_BENCH_MODELS", HOME / ".cache/geniex/bench-models"))
MTMD = HOME / ".cache/geniex-goldens/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-mtmd-cli"


def ours(geniex: str, text: pathlib.Path, mmproj: pathlib.Path, image: str, threads: int,
         reps: int) -> dict:
    out = subprocess.run([geniex, "bench", "-m", str(text), "--mmproj", str(mmproj), "--image", image,
                          "-p", "8", "-n", "16", "-r", str(reps), "-t", str(threads), "--json"],
                         check=True, capture_output=True, text=True).stdout
    img = json.loads(out)["image"]
    keys = ("encode_ms_per_view", "preprocess_ms", "prefill_ms", "ttft_ms")
    return {k: img[k]["samples"] for k in keys} | {
        "views": img["views"], "prompt_tokens": img["prompt_tokens"]}


def theirs(text: pathlib.Path, mmproj: pathlib.Path, image: str, threads: int) -> float:
    r = subprocess.run([str(MTMD), "-m", str(text), "--mmproj", str(mmproj), "--image", image,
                        "-p", "Describe.", "-n", "1", "-t", str(threads), "--temp", "0",
                        "--chat-template", "chatml"], capture_output=True, text=True)
    m = re.search(r"batch encoding done in (\d+) ms", r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        raise SystemExit("llama-mtmd-cli failed:\n" + (r.stdout + r.stderr)[-2000:])
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--geniex", default=str(REPO / "build/release/tools/geniex"))
    ap.add_argument("--text", default=str(MODELS / "lfm2-vl-450m-q4_0.gguf"))
    ap.add_argument("--mmproj", default=str(MODELS / "mmproj-lfm2-vl-450m-f16.gguf"))
    ap.add_argument("--image", default=str(REPO / "tests/data/vision/astronaut.png"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    text, mmproj = pathlib.Path(a.text), pathlib.Path(a.mmproj)
    enc, full, prep, pre, ttft, llama = [], [], [], [], [], []
    views = n_prompt = 0
    for rnd in range(a.rounds):
        o = ours(a.geniex, text, mmproj, a.image, a.threads, a.reps)
        views = o["views"]
        full += o["encode_ms_per_view"]
        prep += [p / views for p in o["preprocess_ms"]]
        enc += [e - p / views for e, p in zip(o["encode_ms_per_view"], o["preprocess_ms"])]
        pre += o["prefill_ms"]
        ttft += o["ttft_ms"]
        views, n_prompt = o["views"], o["prompt_tokens"]
        t = theirs(text, mmproj, a.image, a.threads)
        llama.append(t)
        print(f"round {rnd + 1}: ours encoder/view {statistics.median(enc[-len(o['preprocess_ms']):]):.0f} ms, "
              f"llama.cpp {t:.0f} ms", flush=True)
    mo, mt = statistics.median(enc), statistics.median(llama)
    print(f"\n{pathlib.Path(a.image).name}: {views} view(s), {a.threads} threads, "
          f"{a.rounds} alternating rounds")
    print("| | GenieX | llama.cpp | ratio |\n|---|---:|---:|---:|")
    print(f"| encoder + projector per 512x512 view, ms | {mo:.0f} | {mt:.0f} | {mt / mo:.2f}x |")
    print(f"| image decoding + preprocessing per view, ms | {statistics.median(prep):.1f} | | |")
    print(f"| all of it (ours: decode + preprocess + encoder + projector), ms | "
          f"{statistics.median(full):.0f} | | {mt / statistics.median(full):.2f}x |")
    print(f"| prefill of the image prompt ({n_prompt} tokens), ms | {statistics.median(pre):.0f} | | |")
    print(f"| TTFT (encode + prefill + first token), ms | {statistics.median(ttft):.0f} | | |")


if __name__ == "__main__":
    main()
