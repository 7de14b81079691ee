#!/usr/bin/env python3
"""Fidelity table: KL divergence of GenieX (every ISA level and placement) and of llama.cpp's own
batch paths against llama.cpp's default base file, in one run on one text.

  .venv/bin/python bench/fidelity.py [-m MODEL] [-f TEXT] [-c 512] [--chunks 8] [--rows ...]

llama.cpp's own noise ("the floor") is llama-perplexity with a small micro-batch (-ub 8) against
its default base: GenieX's default CPU path should sit inside it. Rows (--rows, default all that
this machine runs): llama.cpp -ub 8 / -ub 1 / -t 1; ours at each dispatched ISA level, with a
small batch (-b 8, mostly the decode kernels), per KV type (with llama.cpp's own figure for that
KV type beside it), on OpenCL (PoCL) and on the reference NPU plugin. Prints a markdown table
(and --json-out FILE). The base file (~130 MB per chunk for a 262,144-token vocabulary) lives in
a temporary folder that is removed afterwards.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = pathlib.Path(os.path.expanduser("~/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf"))


def llama_dir() -> pathlib.Path:
    d = os.environ.get("GENIEX_LLAMACPP_BIN") or subprocess.run(
        ["bash", str(REPO / "scripts/build_llamacpp.sh"), "--print-dir"], capture_output=True,
        text=True, check=True).stdout.strip()
    return pathlib.Path(d)


def cpu_isas() -> list[str]:
    flags = open("/proc/cpuinfo").read()
    isas = ["scalar", "sse4", "avx2"]
    if " avx512vnni" in flags or " avx512_vnni" in flags:
        isas.append("avx512vnni")
    return isas


def parse_llama(out: str) -> dict:
    def val(label):
        m = re.search(re.escape(label) + r"\s*:?\s*(-?[0-9.]+)\s*±\s*(-?[0-9.]+)", out)
        return (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))

    kld, same, ratio = val("Mean    KLD:"), val("Same top p:"), val("Mean ln(PPL(Q)/PPL(base))")
    return {"kld": kld[0], "kld_err": kld[1], "same_top": same[0] / 100, "same_top_err": same[1] / 100,
            "ln_ratio": ratio[0], "ln_ratio_err": ratio[1], "ppl": val("Mean PPL(Q)")[0]}


def run(cmd, env=None, timeout=3600, want=None):
    """Runs cmd; with `want`, reruns (up to 5 times) while that text is missing from its output:
    llama.cpp's log thread can lose the last lines at exit (llama.cpp issue 22142)."""
    t0 = time.monotonic()
    for _ in range(5):
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
        if want is None or want in r.stdout + r.stderr:
            return r, time.monotonic() - t0
        t0 = time.monotonic()
    raise RuntimeError(f"{' '.join(map(str, cmd))} never printed {want!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", type=pathlib.Path, default=DEFAULT_MODEL)
    ap.add_argument("-f", "--file", type=pathlib.Path, default=REPO / "tests/data/eval/sherlock_200k.txt")
    ap.add_argument("-c", "--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--geniex", type=pathlib.Path, default=REPO / "build/release/tools/geniex")
    ap.add_argument("--geniex-aarch64", type=pathlib.Path, default=REPO / "build/aarch64/tools/geniex",
                    help="the aarch64 build, run under qemu-aarch64 for the arm:<level> rows")
    ap.add_argument("--rows", nargs="+",
                    help="subset of: llama-ub8 llama-ub1 llama-t1 isa:<level> small-batch kv:q8_0 kv:q4_0 gpu npu "
                         "arm:<level> (neon, neon_dotprod, neon_i8mm: the aarch64 build under qemu -cpu max)")
    ap.add_argument("--json-out", type=pathlib.Path)
    a = ap.parse_args()

    lp = llama_dir() / "llama-perplexity"
    rows = a.rows or (["llama-ub8", "llama-t1"] + [f"isa:{i}" for i in cpu_isas()] +
                      ["small-batch", "kv:q8_0", "kv:q4_0", "gpu", "npu"])
    results = []
    with tempfile.TemporaryDirectory(prefix="geniex-fidelity-") as tmp:
        base = pathlib.Path(tmp) / "base.kld"
        common = ["-m", a.model, "-c", a.ctx, "-t", a.threads]
        _, secs = run([lp, *common, "-f", a.file, "--chunks", a.chunks, "--kl-divergence-base", base],
                      want="Final estimate")
        print(f"# base: llama-perplexity default settings, {a.chunks} chunks of {a.ctx} ({secs:.0f} s)",
              file=sys.stderr)

        def llama_row(name, *extra):
            r, s = run([lp, *common, "--kl-divergence-base", base, "--kl-divergence", *extra],
                       want="Same top p:")
            results.append({"row": name, "tool": "llama.cpp", "args": " ".join(map(str, extra)),
                            "seconds": round(s, 1), **parse_llama(r.stdout + r.stderr)})

        def ours_row(name, *extra, env_extra=None, prefix=None):
            env = dict(os.environ, **(env_extra or {}))
            r, s = run([*(prefix or [a.geniex]), "perplexity", "-m", a.model, "-t", a.threads, "--kl-divergence-base", base,
                        "--kl-divergence", "--json", *extra], env=env)
            k = json.loads(r.stdout)["kl_divergence"]
            results.append({"row": name, "tool": "geniex",
                            "args": " ".join([*map(str, extra), *[f"{k_}={v}" for k_, v in (env_extra or {}).items()]]),
                            "seconds": round(s, 1), "kld": k["kld"]["value"], "kld_err": k["kld"]["error"],
                            "same_top": k["same_top_p"]["value"], "same_top_err": k["same_top_p"]["error"],
                            "ln_ratio": k["ln_ppl_ratio"]["value"], "ln_ratio_err": k["ln_ppl_ratio"]["error"],
                            "ppl": k["ppl"]["value"]})

        for row in rows:
            print(f"# {row} ...", file=sys.stderr)
            try:
                if row == "llama-ub8":
                    llama_row(row, "-ub", 8)
                elif row == "llama-ub1":
                    llama_row(row, "-ub", 1, "-b", 1)
                elif row == "llama-t1":
                    llama_row(row, "-t", 1)
                elif row.startswith("isa:"):
                    ours_row(row, "--device", "cpu", "--cpu-tuning", f"isa={row[4:]}")
                elif row.startswith("arm:"):
                    # The cross sysroot's libc must win over the multiarch arm64 one (else
                    # pthread_create hangs under qemu: cmake/toolchain-aarch64.cmake).
                    qemu = ["qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu", "-E",
                            "LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib", "-cpu", "max", a.geniex_aarch64]
                    ours_row(row, "--device", "cpu", "--cpu-tuning", f"isa={row[4:]}", prefix=qemu)
                elif row == "small-batch":
                    ours_row(row, "--device", "cpu", "-b", 8)
                elif row.startswith("kv:"):
                    t = row[3:]
                    llama_row(f"llama-{row}", "-ctk", t, "-ctv", t, "-fa", "on")
                    ours_row(row, "--device", "cpu", "--kv-type", t)
                elif row == "gpu":
                    ours_row(row, "--device", "gpu")
                elif row == "npu":
                    ours_row(row, "--device", "npu")
                else:
                    raise ValueError(f"unknown row {row}")
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                results.append({"row": row, "error": str(e).splitlines()[0]})
            print(json.dumps(results[-1]), file=sys.stderr)

    print(f"\n{a.model.name}, {a.file.name}, {a.chunks} x {a.ctx} tokens, {a.threads} threads; "
          "KLD and same-top-p against llama.cpp's default base\n")
    print("| row | tool | settings | mean KLD | same top p | ln(PPL/PPL base) | s |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['row']} | | | error: {r['error']} | | | |")
            continue
        print(f"| {r['row']} | {r['tool']} | {r['args']} | {r['kld']:.6f} ± {r['kld_err']:.6f} | "
              f"{100 * r['same_top']:.2f} ± {100 * r['same_top_err']:.2f} % | "
              f"{r['ln_ratio']:+.5f} ± {r['ln_ratio_err']:.5f} | {r['seconds']} |")
    if a.json_out:
        a.json_out.write_text(json.dumps({"model": str(a.model), "text": str(a.file), "ctx": a.ctx,
                                          "chunks": a.chunks, "rows": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
