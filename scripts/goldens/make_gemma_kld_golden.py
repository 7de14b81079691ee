#!/usr/bin/env python3
"""Compact KL-divergence golden for the real Gemma 3 270M Q4_K_M (tests/data/eval/gemma3_270m_kld_golden.json).

A full llama.cpp base file is ~130 MB per 512-token chunk (262,144-token vocabulary), too large
to commit. This keeps, per scored position, llama.cpp's top-K log-probabilities (its default
settings) and the next token; and llama.cpp's own noise on the same positions ("the floor":
llama-perplexity -ub 8 against the default) measured two ways: over the whole vocabulary (as
llama-perplexity --kl-divergence reports it) and over the golden's support (top-K ids plus one
bin for the rest of the mass), which is what the test can compute from the golden.

  .venv/bin/python scripts/goldens/make_gemma_kld_golden.py [--chunks 2] [-c 512] [-k 32]
  .venv/bin/python scripts/goldens/make_gemma_kld_golden.py --kv-type q8_0|q4_0

With --kv-type (tests/data/eval/gemma3_270m_kld_golden_<type>.json) the golden is llama.cpp with
its KV cache quantized (-ctk/-ctv, flash attention on, as it requires), and, since its -ub 8 path
gives the same bits there, the "cost" replaces the floor: llama.cpp's quantized cache against its
own default (f16) base on the same positions and support, i.e. what the cache type costs it.

Needs llama-perplexity (scripts/build_llamacpp.sh) and the model (scripts/setup.sh). Takes
about a minute; writes ~0.5 GB of temporary base files.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = pathlib.Path(os.path.expanduser("~/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf"))


def read_base(path: pathlib.Path):
    """(n_ctx, n_vocab, n_chunk, tokens[n_chunk][n_ctx], log-probs[n_chunk * n_scored][n_vocab])."""
    raw = path.read_bytes()
    assert raw[:8] == b"_logits_", path
    n_ctx, n_vocab, n_chunk = np.frombuffer(raw, "<u4", 1, 8)[0], *np.frombuffer(raw, "<i4", 2, 12)
    n_ctx, n_vocab, n_chunk = int(n_ctx), int(n_vocab), int(n_chunk)
    tokens = np.frombuffer(raw, "<i4", n_ctx * n_chunk, 20).reshape(n_chunk, n_ctx)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    n_scored = n_ctx - 1 - n_ctx // 2
    rows = np.frombuffer(raw, "<u2", n_chunk * n_scored * nv, 20 + 4 * n_ctx * n_chunk).reshape(-1, nv)
    head = rows[:, :4].copy().view("<f4")  # scale, min_log_prob
    codes = rows[:, 4:4 + n_vocab].astype(np.float32)
    lp = head[:, 0:1] * codes + head[:, 1:2]
    return n_ctx, n_vocab, n_chunk, tokens, lp


def coarse_kld(lp_base: np.ndarray, lp_q: np.ndarray, support: np.ndarray) -> np.ndarray:
    """KL(base || q) per row over the bins {each id of support} + {the rest}."""
    pb = np.exp(np.take_along_axis(lp_base, support, 1).astype(np.float64))
    pq = np.exp(np.take_along_axis(lp_q, support, 1).astype(np.float64))
    rb = np.clip(1 - pb.sum(1), 1e-12, None)
    rq = np.clip(1 - pq.sum(1), 1e-12, None)
    return (pb * (np.log(pb) - np.log(pq))).sum(1) + rb * (np.log(rb) - np.log(rq))


def run_llama(cmd, want):
    """Runs llama-perplexity, again while `want` is missing from its output: its log thread can
    lose the last lines at exit (llama.cpp issue 22142)."""
    for _ in range(5):
        r = subprocess.run(cmd, capture_output=True, text=True, check=True)
        if want in r.stdout + r.stderr:
            return r.stdout + r.stderr
    raise RuntimeError(f"{cmd[0]} never printed {want!r}")


def llama_value(out: str, label: str) -> float:
    m = re.search(re.escape(label) + r"\s*:?\s*(-?[0-9.]+)", out)
    assert m, label
    return float(m.group(1))


def llama_bin() -> pathlib.Path:
    d = subprocess.run(["bash", str(REPO / "scripts/build_llamacpp.sh"), "--print-dir"],
                       capture_output=True, text=True, check=True).stdout.strip()
    return pathlib.Path(d) / "llama-perplexity"


def positions_of(n_ctx, n_chunk, tokens, lp, order):
    n_scored = n_ctx - 1 - n_ctx // 2
    out = []
    for c in range(n_chunk):
        for i in range(n_scored):
            row = c * n_scored + i
            out.append({"chunk": c, "pos": n_ctx // 2 + i, "next": int(tokens[c, n_ctx // 2 + i + 1]),
                        "ids": [int(x) for x in order[row]],
                        "logprobs": [round(float(x), 5) for x in lp[row, order[row]]]})
    return out


def quantized_kv_golden(a) -> int:
    common = [str(llama_bin()), "-m", str(a.model), "-c", str(a.ctx), "-t", "2"]
    kv = ["-ctk", a.kv_type, "-ctv", a.kv_type, "-fa", "on"]
    with tempfile.TemporaryDirectory(prefix="geniex-kld-golden-") as tmp:
        base, quant = pathlib.Path(tmp) / "f16.kld", pathlib.Path(tmp) / "q.kld"
        run_llama(common + ["-f", str(a.file), "--chunks", str(a.chunks), "--kl-divergence-base", str(base)],
                  "Final estimate: PPL =")
        out = run_llama(common + kv + ["-f", str(a.file), "--chunks", str(a.chunks),
                                       "--kl-divergence-base", str(quant)], "Final estimate: PPL =")
        ppl = llama_value(out, "Final estimate: PPL =")
        out = run_llama(common + kv + ["--kl-divergence-base", str(base), "--kl-divergence"], "Same top p:")
        cost_full = {"kld": llama_value(out, "Mean    KLD:"), "same_top": llama_value(out, "Same top p:") / 100}
        n_ctx, n_vocab, n_chunk, tokens, lp_f16 = read_base(base)
        _, _, _, tokens2, lp = read_base(quant)
        assert (tokens == tokens2).all()
    # The cost in the frames the test measures ours in: KL(f16 || quantized) over the f16
    # golden's top-K ("ours vs llama.cpp's default"), and KL(quantized || f16) over this golden's
    # top-K ("ours vs llama.cpp's quantized cache": how far llama.cpp's own f16 run sits).
    order_f16 = np.argsort(-lp_f16, axis=1, kind="stable")[:, :a.top_k]
    order = np.argsort(-lp, axis=1, kind="stable")[:, :a.top_k]
    cost_vs_f16 = coarse_kld(lp_f16, lp, order_f16)
    f16_vs_this = coarse_kld(lp, lp_f16, order)
    golden = {
        "source": "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36) llama-perplexity "
                  f"{' '.join(kv)}, -c {n_ctx} -t 2, on {a.file.name}; made by "
                  f"scripts/goldens/make_gemma_kld_golden.py --kv-type {a.kv_type}",
        "model": a.model.name, "kv_type": a.kv_type, "n_ctx": n_ctx, "n_vocab": n_vocab,
        "n_chunks": n_chunk, "top_k": a.top_k, "llama_cpp_ppl": ppl,
        "cost": {"what": f"llama.cpp with a {a.kv_type} cache against its default (f16) base, same positions",
                 "full_vocab": cost_full,
                 "support_kld_vs_f16": float(cost_vs_f16.mean()),
                 "support_kld_f16_vs_this": float(f16_vs_this.mean()),
                 "same_top_vs_f16": float((lp.argmax(1) == lp_f16.argmax(1)).mean())},
        "chunks": [[int(t) for t in tokens[c]] for c in range(n_chunk)],
        "positions": positions_of(n_ctx, n_chunk, tokens, lp, order),
    }
    a.out.write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    print(f"{a.out}: {len(golden['positions'])} positions, top-{a.top_k}; cost vs f16: support KLD "
          f"{cost_vs_f16.mean():.6f}, full KLD {cost_full['kld']:.6f}; PPL {ppl}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", type=pathlib.Path, default=MODEL)
    ap.add_argument("-f", "--file", type=pathlib.Path, default=REPO / "tests/data/eval/sherlock_200k.txt")
    ap.add_argument("-c", "--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("-k", "--top-k", type=int, default=32)
    ap.add_argument("--kv-type", choices=["q8_0", "q4_0"])
    ap.add_argument("-o", "--out", type=pathlib.Path)
    a = ap.parse_args()
    if a.out is None:
        suffix = f"_{a.kv_type}" if a.kv_type else ""
        a.out = REPO / f"tests/data/eval/gemma3_270m_kld_golden{suffix}.json"
    if a.kv_type:
        return quantized_kv_golden(a)

    bindir = pathlib.Path(subprocess.run(["bash", str(REPO / "scripts/build_llamacpp.sh"), "--print-dir"],
                                         capture_output=True, text=True, check=True).stdout.strip())
    lp_bin = bindir / "llama-perplexity"
    common = [str(lp_bin), "-m", str(a.model), "-c", str(a.ctx), "-t", "2"]
    with tempfile.TemporaryDirectory(prefix="geniex-kld-golden-") as tmp:
        base, noisy = pathlib.Path(tmp) / "base.kld", pathlib.Path(tmp) / "ub8.kld"
        out = run_llama(common + ["-f", str(a.file), "--chunks", str(a.chunks), "--kl-divergence-base", str(base)],
                        "Final estimate: PPL =")
        ppl = llama_value(out, "Final estimate: PPL =")
        out = run_llama(common + ["-ub", "8", "--kl-divergence-base", str(base), "--kl-divergence"], "Same top p:")
        floor_full = {"kld": llama_value(out, "Mean    KLD:"), "same_top": llama_value(out, "Same top p:") / 100,
                      "ln_ppl_ratio": llama_value(out, "Mean ln(PPL(Q)/PPL(base))")}
        subprocess.run(common + ["-ub", "8", "-f", str(a.file), "--chunks", str(a.chunks),
                                 "--kl-divergence-base", str(noisy)], capture_output=True, text=True, check=True)
        n_ctx, n_vocab, n_chunk, tokens, lp = read_base(base)
        _, _, _, tokens2, lp_ub8 = read_base(noisy)
        assert (tokens == tokens2).all()

    order = np.argsort(-lp, axis=1, kind="stable")[:, :a.top_k]
    kl = coarse_kld(lp, lp_ub8, order)
    same = (lp.argmax(1) == lp_ub8.argmax(1)).mean()
    n_scored = n_ctx - 1 - n_ctx // 2
    positions = []
    for c in range(n_chunk):
        for i in range(n_scored):
            row = c * n_scored + i
            positions.append({"chunk": c, "pos": n_ctx // 2 + i, "next": int(tokens[c, n_ctx // 2 + i + 1]),
                              "ids": [int(x) for x in order[row]],
                              "logprobs": [round(float(x), 5) for x in lp[row, order[row]]]})
    golden = {
        "source": "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36) llama-perplexity, default settings, "
                  f"-c {n_ctx} -t 2, on {a.file.name}; made by scripts/goldens/make_gemma_kld_golden.py",
        "model": a.model.name, "n_ctx": n_ctx, "n_vocab": n_vocab, "n_chunks": n_chunk, "top_k": a.top_k,
        "llama_cpp_ppl": ppl,
        "floor": {"what": "llama-perplexity -ub 8 against the default base, same positions",
                  "full_vocab": floor_full,
                  "support_kld": float(kl.mean()), "support_kld_p99": float(np.percentile(kl, 99)),
                  "same_top": float(same)},
        "chunks": [[int(t) for t in tokens[c]] for c in range(n_chunk)],
        "positions": positions,
    }
    a.out.write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    print(f"{a.out}: {len(positions)} positions, top-{a.top_k}; floor: support KLD {kl.mean():.6f}, "
          f"full KLD {floor_full['kld']:.6f}, same top {same:.4f}; PPL {ppl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
