#!/usr/bin/env python3
"""Decode tok/s from Python: GenieX (native geniex.Model and geniex.transformers' generate)
against llama-cpp-python's ``Llama`` on the same GGUF file, threads and token count.

Needs llama-cpp-python, which is not a project dependency: run it with the goldens venv, where
it is built from its sdist for this CPU (never in CI), and geniex from a build tree:

  CMAKE_ARGS="-DGGML_NATIVE=ON" ~/.cache/geniex-goldens/venv/bin/pip install \\
      ~/.cache/geniex-goldens/llama_cpp_python-0.3.36.tar.gz
  PYTHONPATH=build/release/python ~/.cache/geniex-goldens/venv/bin/python \\
      bench/llamacpp_python_vs_geniex.py -m MODEL.gguf [-t 2] [-n 128] [-r 5]

Decode speed is (n - 1) / (time(n new tokens) - time(1 new token)) from the same prompt, each
call from an empty context, so prefill and the first token's latency cancel out. Both sides
decode greedily without stopping at end-of-generation (GenieX: ignore_eos; Llama: its
``generate()`` token iterator, which never stops by itself), so random-weight bench shapes work
too. Each side runs in its own process per round (load, warm-up, the two timed calls), the
sides alternating, -r rounds; medians. llama-cpp-python runs with OMP_WAIT_POLICY=PASSIVE unless
--omp-active (its OpenMP threads spin otherwise, which costs it dearly on a loaded host). Prints
one JSON object.
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

PROMPT = "1, 2, 3, 4, 5,"


def decode_tps(run, n: int) -> float:
    t0 = time.perf_counter()
    got1 = run(1)
    t1 = time.perf_counter()
    got = run(n)
    t2 = time.perf_counter()
    if got != n or got1 != 1:
        raise SystemExit(f"generated {got} tokens, wanted {n}")
    return (n - 1) / ((t2 - t1) - (t1 - t0))


def side_runner(side: str, model: str, threads: int, ctx: int):
    """Loads one side in this process and returns (run(n) -> tokens generated, prompt tokens)."""
    if side == "llama_cpp_python":
        import llama_cpp

        llm = llama_cpp.Llama(model_path=model, n_ctx=ctx, n_threads=threads,
                              n_threads_batch=threads, n_batch=512, verbose=False)
        l_ids = llm.tokenize(PROMPT.encode(), add_bos=True, special=False)

        def run_llama(n: int) -> int:
            llm.reset()
            k = 0
            for _ in llm.generate(l_ids, top_k=1, top_p=1.0, min_p=0.0, temp=0.0,
                                  repeat_penalty=1.0, reset=True):
                k += 1
                if k == n:
                    break
            return k

        return run_llama, len(l_ids)

    import geniex

    if side == "geniex_native":
        native = geniex.load(model, device="cpu", n_threads=threads, n_ctx=ctx)
        ids = native.tokenize(PROMPT)

        def run_native(n: int) -> int:
            native.reset()  # no prefix reuse: each call prefills like the first
            return len(native.generate(ids, max_tokens=n, temperature=0, ignore_eos=True).tokens)

        return run_native, len(ids)

    from geniex.transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(model, device_map="cpu", n_threads=threads,
                                              n_ctx=ctx)
    ids = hf.native.tokenize(PROMPT)

    def run_hf(n: int) -> int:
        hf.native.reset()
        # eos_token_id=None: nothing stops it but max_new_tokens, as Llama.generate above.
        out = hf.generate([ids], max_new_tokens=n, eos_token_id=None)
        return len(out[0]) - len(ids)

    return run_hf, len(ids)


SIDES = ("geniex_native", "geniex_transformers", "llama_cpp_python")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=5)
    ap.add_argument("-c", "--ctx", type=int, default=1024)
    ap.add_argument("--omp-active", action="store_true",
                    help="leave OMP_WAIT_POLICY unset for llama-cpp-python (default: PASSIVE)")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # one round, in a child
    args = ap.parse_args()

    if args.side:
        run, n_prompt = side_runner(args.side, args.model, args.threads, args.ctx)
        run(2)  # warm-up
        print(json.dumps({"tok_s": decode_tps(run, args.n_gen), "prompt_tokens": n_prompt}))
        return

    # Each side runs in its own process per round (two engines' idle thread pools in one process
    # would take CPU from each other), alternating, so load from elsewhere hits all alike.
    got: dict[str, list[float]] = {k: [] for k in SIDES}
    n_prompt: dict[str, int] = {}
    env = dict(os.environ)
    if not args.omp_active:
        # llama-cpp-python's wheel builds ggml with OpenMP, whose threads spin at each barrier:
        # on a shared, loaded host a descheduled thread stalls the other (7x slower decode here).
        # Passive waiting is its best setting there.
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    for _ in range(args.reps):
        for side in SIDES:
            r = subprocess.run([sys.executable, __file__, "--side", side, "-m", args.model,
                                "-t", str(args.threads), "-n", str(args.n_gen), "-c",
                                str(args.ctx)], capture_output=True, text=True, check=True,
                               env=env if side == "llama_cpp_python" else None)
            line = json.loads(r.stdout.strip().splitlines()[-1])
            got[side].append(line["tok_s"])
            n_prompt[side] = line["prompt_tokens"]
    med = {k: statistics.median(v) for k, v in got.items()}
    import llama_cpp

    print(json.dumps({
        "model": Path(args.model).name, "threads": args.threads, "n_gen": args.n_gen,
        "reps": args.reps, "prompt_tokens": n_prompt,
        "llama_cpp_python_version": llama_cpp.__version__,
        **{f"{k}_tok_s": round(v, 2) for k, v in med.items()},
        "runs": {k: [round(x, 2) for x in v] for k, v in got.items()},
        "native_vs_llama_cpp_python": round(med["geniex_native"] / med["llama_cpp_python"], 3),
        "transformers_vs_llama_cpp_python": round(
            med["geniex_transformers"] / med["llama_cpp_python"], 3)}))


if __name__ == "__main__":
    sys.exit(main())
