#!/usr/bin/env python3
"""How long the engine takes to stop a generation after its cancel token fires (what Ctrl-C
does from Python: KeyboardInterrupt is raised at once, the engine stops at its next check).

  PYTHONPATH=build/release/python .venv/bin/python bench/python_cancel_latency.py \\
      [-m MODEL] [-t 2] [-r 5] [-b 512]

Two cases, -r times each, alternating: a long prompt (~2,500 tokens, prefilled in chunks of -b
tokens) cancelled part-way through its prefill, and a decode cancelled after 1 s. The latency is
from CancelToken.cancel() to generate() returning; also printed: one prefill chunk's time (the
whole prompt's prefill / its chunks), the bound of the prefill case while the token is checked
once per engine step. Medians; one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

DEFAULT_MODEL = Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"
LONG = "The history of the city is long and complicated. " * 250


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default=os.environ.get("GENIEX_MODEL", str(DEFAULT_MODEL)))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=5)
    ap.add_argument("-b", "--batch", type=int, default=512)
    args = ap.parse_args()

    import geniex

    m = (geniex.ModelBuilder(args.model).with_device(geniex.Device.cpu())
         .with_threads(args.threads).with_context_size(4096).with_batch_size(args.batch).build())

    def cancelled_after(prompt: str, wait: float, **kw) -> tuple[float, str]:
        m.reset()
        tok = geniex.CancelToken()
        out: dict = {}

        def run() -> None:
            out["r"] = m.generate(prompt, temperature=0, cancel=tok, **kw)
            out["t"] = time.monotonic()

        th = threading.Thread(target=run)
        th.start()
        time.sleep(wait)
        sent = time.monotonic()
        tok.cancel()
        th.join()
        return out["t"] - sent, out["r"].stop_reason

    m.reset()
    t0 = time.monotonic()
    full = m.generate(LONG, max_tokens=1, temperature=0)
    prefill_s = time.monotonic() - t0
    n_prompt = full.timings.prompt_tokens
    chunk_s = prefill_s / max(1, -(-n_prompt // args.batch))
    pre, dec = [], []
    for _ in range(args.reps):
        lat, why = cancelled_after(LONG, 0.3 * prefill_s, max_tokens=4)
        if why == "cancelled":
            pre.append(lat)
        lat, why = cancelled_after("Once upon a time", 1.0, max_tokens=3000, ignore_eos=True)
        if why == "cancelled":
            dec.append(lat)
    print(json.dumps({
        "model": Path(args.model).name, "threads": args.threads, "batch": args.batch,
        "prompt_tokens": n_prompt, "prefill_s": round(prefill_s, 3),
        "prefill_chunk_s": round(chunk_s, 3),
        "stop_after_cancel_in_prefill_s": round(statistics.median(pre), 3) if pre else None,
        "stop_after_cancel_in_decode_s": round(statistics.median(dec), 3) if dec else None,
        "runs": {"prefill": [round(x, 3) for x in pre], "decode": [round(x, 3) for x in dec]}}))


if __name__ == "__main__":
    sys.exit(main())
