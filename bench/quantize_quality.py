#!/usr/bin/env python3
"""Quality of every quantization type on the real Gemma 3 270M: size, bits per weight,
perplexity and KL divergence to the F32 source, for `geniex quantize` and `llama-quantize`,
with and without an importance matrix.

The only real weights we have are the Q4_K_M file setup.sh fetches, so the F32 source is that
file dequantized (llama-quantize --allow-requantize ... F32). The importance matrix is computed
by `geniex imatrix` on the F32 source; both quantizers get the same one. Perplexity and KLD are
measured by llama-perplexity (the judge) against the F32 source's logits.

  .venv/bin/python bench/quantize_quality.py [--chunks 4] [--ctx 512] [--imatrix-chunks 2]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
GEMMA = pathlib.Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"
TEXT = REPO / "tests/data/models/ppl_text.txt"
TYPES = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_XS", "IQ4_NL", "Q4_0", "Q4_1", "Q4_K_S",
         "Q4_K_M", "Q5_0", "Q5_1", "Q5_K_S", "Q5_K_M", "Q6_K", "Q8_0", "BF16", "F16"]
WEIGHTED = {"Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "IQ4_XS", "IQ4_NL", "Q4_0", "Q4_1", "Q4_K_S",
            "Q4_K_M", "Q5_0", "Q5_1", "Q5_K_S", "Q5_K_M", "Q6_K"}


def sh(cmd, **kw) -> str:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}")
    return r.stdout + r.stderr


def digest(p: pathlib.Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--imatrix-chunks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--types", nargs="+", default=TYPES, help="types without an importance matrix")
    ap.add_argument("--imatrix-types", nargs="+", default=[t for t in TYPES if t in WEIGHTED],
                    help="types quantized with the importance matrix")
    ap.add_argument("--geniex", type=pathlib.Path,
                    default=pathlib.Path(os.environ.get("GENIEX_BUILD_DIR", REPO / "build/release")) / "tools/geniex")
    a = ap.parse_args()
    bindir = pathlib.Path(os.environ.get("GENIEX_LLAMACPP_BIN") or sh(
        ["bash", REPO / "scripts/build_llamacpp.sh", "--print-dir"]).strip())
    t = str(a.threads)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = pathlib.Path(tmpd)
        src = tmp / "gemma-f32.gguf"
        sh([bindir / "llama-quantize", "--allow-requantize", GEMMA, src, "F32", t])
        base = tmp / "base.kld"
        sh([bindir / "llama-perplexity", "-m", src, "-f", TEXT, "-c", a.ctx, "--chunks", a.chunks,
            "-t", t, "--kl-divergence-base", base])
        im = tmp / "imatrix.gguf"
        sh([a.geniex, "imatrix", "-m", src, "-f", TEXT, "-o", im, "-c", "128", "--chunks",
            a.imatrix_chunks])
        n_params = None
        rows = []
        for imat in (False, True):
            for q in (a.imatrix_types if imat else a.types):
                flags = ["--imatrix", im] if imat else []
                ours, ref = tmp / "ours.gguf", tmp / "ref.gguf"
                out = sh([a.geniex, "quantize", *flags, src, ours, q, "-t", t])
                sh([bindir / "llama-quantize", *flags, src, ref, q, t])
                same = digest(ours) == digest(ref)
                m = re.search(r"quant size\s*=\s*([\d.]+) MiB \(([\d.]+) BPW\)", out)
                rep = sh([bindir / "llama-perplexity", "-m", ours, "-t", t, "--kl-divergence-base", base,
                          "--kl-divergence"])
                ppl = re.search(r"Mean PPL\(Q\)\s*:\s*([\d.]+)", rep)
                kld = re.search(r"Mean\s+KLD:\s*([\d.]+)", rep)
                rows.append((q, "yes" if imat else "no", m.group(1), m.group(2),
                             ppl.group(1) if ppl else "?", kld.group(1) if kld else "?", same))
                print(rows[-1], flush=True)
                ours.unlink()
                ref.unlink()
    print(f"\nGemma 3 270M (Q4_K_M dequantized to F32), {a.chunks} chunks of {a.ctx} of {TEXT.name}")
    print("| type | imatrix | tensor MiB | BPW | PPL | KLD to F32 | geniex = llama-quantize |")
    print("|---|---|--:|--:|--:|--:|---|")
    for q, im_, mib, bpw, ppl, kld, same in rows:
        print(f"| {q} | {im_} | {mib} | {bpw} | {ppl} | {kld} | {'byte-identical' if same else 'DIFFERENT'} |")


if __name__ == "__main__":
    main()
