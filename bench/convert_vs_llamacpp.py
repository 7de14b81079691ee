#!/usr/bin/env python3
"""`geniex convert` vs llama.cpp's convert_hf_to_gguf.py on a Llama 3.2 1B-shaped Hugging Face
checkpoint (random F16 weights: 16 layers, hidden 2048, FFN 8192, 32 heads / 8 KV heads; the
tiny test checkpoint's truncated Llama 3 tokenizer, so the vocabulary has 2048 rows and the layer
stack holds the bulk, 0.97 B parameters). Wall time and peak RSS (GNU time), alternating runs,
medians; the two outputs are compared tensor by tensor.

  ~/.cache/geniex-goldens/venv/bin/python bench/convert_vs_llamacpp.py [--runs 3] [--outtype f16]

Needs the goldens venv (numpy, safetensors) and llama.cpp's converter from the llama-cpp-python
sdist (scripts/build_llamacpp.sh). The checkpoint is made once under ~/.cache/geniex/bench-hf."""
from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import save_file

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = ROOT / "tests/data/hf/llama"
CKPT = pathlib.Path.home() / ".cache/geniex/bench-hf/llama-1b-shape"
LLAMA = pathlib.Path.home() / ".cache/geniex-goldens/llama_cpp_python-0.3.36/vendor/llama.cpp"


def make_checkpoint() -> None:
    if (CKPT / "model.safetensors").exists():
        return
    CKPT.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((TINY / "config.json").read_text())
    cfg.update(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, dtype="float16",
               tie_word_embeddings=True)
    (CKPT / "config.json").write_text(json.dumps(cfg, indent=2))
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(TINY / f, CKPT / f)
    rng = np.random.default_rng(0)
    h, ff, kv, v = 2048, 8192, 8 * 64, cfg["vocab_size"]

    def rnd(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    t = {"model.embed_tokens.weight": rnd(v, h), "model.norm.weight": np.ones(h, np.float16)}
    for i in range(16):
        p = f"model.layers.{i}."
        t.update({p + "self_attn.q_proj.weight": rnd(h, h), p + "self_attn.k_proj.weight": rnd(kv, h),
                  p + "self_attn.v_proj.weight": rnd(kv, h), p + "self_attn.o_proj.weight": rnd(h, h),
                  p + "mlp.gate_proj.weight": rnd(ff, h), p + "mlp.up_proj.weight": rnd(ff, h),
                  p + "mlp.down_proj.weight": rnd(h, ff),
                  p + "input_layernorm.weight": np.ones(h, np.float16),
                  p + "post_attention_layernorm.weight": np.ones(h, np.float16)})
    save_file(t, str(CKPT / "model.safetensors"), metadata={"format": "pt"})


def timed(cmd: list[str]) -> tuple[float, float]:
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {r.stderr[-2000:]}")
    secs, kib = r.stderr.strip().splitlines()[-1].split()
    return float(secs), int(kib) / 1024


def tensors_digest(path: pathlib.Path) -> str:
    sys.path.insert(0, str(LLAMA / "gguf-py"))
    import gguf  # noqa: PLC0415
    h = hashlib.sha256()
    for t in gguf.GGUFReader(path).tensors:
        h.update(t.name.encode())
        h.update(np.ascontiguousarray(t.data).tobytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--outtype", default="f16")
    ap.add_argument("--geniex", default=str(ROOT / "build/release/tools/geniex"))
    a = ap.parse_args()
    make_checkpoint()
    out = pathlib.Path(tempfile.mkdtemp())
    ours, theirs = out / "ours.gguf", out / "theirs.gguf"
    g_cmd = [a.geniex, "convert", str(CKPT), "-o", str(ours), "--outtype", a.outtype]
    l_cmd = [sys.executable, str(ROOT / "scripts/goldens/convert_tiny_gguf.py"), "--llama-cpp-dir",
             str(LLAMA), "--tokenizer-pre", "llama-bpe", "--", str(CKPT), "--outfile", str(theirs),
             "--outtype", a.outtype]
    g, l = [], []
    try:
        for _ in range(a.runs):
            g.append(timed(g_cmd))
            l.append(timed(l_cmd))
        same = tensors_digest(ours) == tensors_digest(theirs)
        gt, gm = statistics.median(x[0] for x in g), statistics.median(x[1] for x in g)
        lt, lm = statistics.median(x[0] for x in l), statistics.median(x[1] for x in l)
        size = ours.stat().st_size / 2**20
        print(f"| tool | time (s) | peak RSS (MiB) |\n|---|--:|--:|")
        print(f"| geniex convert | {gt:.2f} | {gm:.0f} |")
        print(f"| convert_hf_to_gguf.py | {lt:.2f} | {lm:.0f} |")
        print(f"\n{lt / gt:.2f}x faster; output {size:.0f} MiB; tensors identical: {same}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
