#!/usr/bin/env python3
"""Random-weight GGUF files with the shapes of real small models, for speed benchmarks.

Writes an F16 GGUF with random weights (normal, std 0.02; norms = 1) and the real shapes of
  llama-3.2-1b   llama arch: n_embd 2048, 16 layers, 32 heads, 8 kv heads, ff 8192,
                 vocab 128256 (llama-bpe tokenizer), tied embeddings, rope theta 500000 with
                 llama3 scaling (factor 32, low 1, high 4, original ctx 8192) as a rope_freqs
                 tensor, exactly as convert_hf_to_gguf.py writes it
  smollm-135m    llama arch: n_embd 576, 30 layers, 9 heads, 3 kv heads, ff 1536,
                 vocab 49152 (starcoder tokenizer, the same size as SmolLM's), tied
  lfm2-350m      lfm2 arch (shared/spec/LFM2.md §5): n_embd 1024, 16 layers (attention at 2, 5,
                 8, 10, 12, 14, short conv L = 3 elsewhere), 16 heads, 8 kv heads, ff 4608,
                 vocab 65536 (the first 65536 pieces of the real Gemma 3 SentencePiece vocab:
                 LFM2's own tokenizer is not on a registry), tied, theta 1e6; conv taps F32
then quantizes it with llama.cpp's own quantizer (llama_cpp.llama_model_quantize) to Q4_0,
Q4_K_M and Q8_0. The tokenizer.* keys are copied from llama.cpp's vocab-only GGUFs.

Output: ~/.cache/geniex/bench-models/<shape>-<quant>.gguf (skipped when present).
The weights are noise: these files are for timing only, never for output quality.

Needs the `gguf` and `llama_cpp` Python packages (the ~/.cache/geniex-goldens/venv has both;
without `llama_cpp`, the llama-quantize binary scripts/setup.sh builds):
  ~/.cache/geniex-goldens/venv/bin/python bench/make_shape_models.py [--shapes ...] [--quants ...]
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import subprocess
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT_DIR = pathlib.Path(os.environ.get("GENIEX_BENCH_MODELS", pathlib.Path.home() / ".cache/geniex/bench-models"))
LLAMA_CPP_SRC = pathlib.Path.home() / ".cache/geniex-goldens/llama_cpp_python-0.3.36/vendor/llama.cpp"

SHAPES = {
    "llama-3.2-1b": dict(
        n_embd=2048, n_layer=16, n_head=32, n_head_kv=8, n_ff=8192, n_vocab=128256,
        ctx=131072, rope_theta=500000.0, eps=1e-5, vocab="ggml-vocab-llama-bpe.gguf",
        llama3_rope=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_ctx=8192),
        name="Llama-3.2-1B shape (random weights)",
    ),
    "smollm-135m": dict(
        n_embd=576, n_layer=30, n_head=9, n_head_kv=3, n_ff=1536, n_vocab=49152,
        ctx=2048, rope_theta=10000.0, eps=1e-5, vocab="ggml-vocab-starcoder.gguf",
        llama3_rope=None, name="SmolLM-135M shape (random weights)",
    ),
}
SHAPES["lfm2-350m"] = dict(
    n_embd=1024, n_layer=16, n_head=16, n_head_kv=8, n_ff=4608, n_vocab=65536, ctx=128000,
    rope_theta=1e6, eps=1e-5, attn_layers=(2, 5, 8, 10, 12, 14), l_cache=3,
    name="LFM2-350M shape (random weights)",
)
# LiquidAI/LFM2-1.2B's config.json: hidden 2048, 16 layers, 32 heads / 8 kv heads, full_attn_idxs
# [2, 5, 8, 10, 12, 14], block_ff_dim 12288 auto-adjusted to int(2 * 12288 / 3) = 8192 (what
# llama.cpp's converter writes), vocab 65536, conv_L_cache 3, tied embeddings.
SHAPES["lfm2-1.2b"] = dict(
    n_embd=2048, n_layer=16, n_head=32, n_head_kv=8, n_ff=8192, n_vocab=65536, ctx=128000,
    rope_theta=1e6, eps=1e-5, attn_layers=(2, 5, 8, 10, 12, 14), l_cache=3,
    name="LFM2-1.2B shape (random weights)",
)
QUANTS = {"Q4_0": 2, "Q8_0": 7, "Q4_K_M": 15}  # LLAMA_FTYPE_MOSTLY_*


def find_vocab(name: str) -> pathlib.Path:
    for d in (REPO / "tests/data/tokenizer", REPO.parent / "shared/testdata/tokenizer", LLAMA_CPP_SRC / "models"):
        if (d / name).is_file():
            return d / name
    sys.exit(f"make_shape_models: vocab file {name} not found")


def copy_tokenizer(writer, vocab_path: pathlib.Path, n_vocab: int) -> None:
    import gguf

    r = gguf.GGUFReader(str(vocab_path))
    for key, field in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vt = field.types[0]
        val = field.contents()
        if vt == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, val)
        else:
            writer.add_key_value(key, val, vt)
    n = len(r.fields["tokenizer.ggml.tokens"].data)
    if n != n_vocab:
        sys.exit(f"make_shape_models: {vocab_path.name} has {n} tokens, the shape needs {n_vocab}")


def llama3_rope_freqs(head_dim: int, theta: float, s: dict) -> np.ndarray:
    # convert_hf_to_gguf.py LlamaModel.generate_extra_tensors
    base = 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    low_wavelen = s["original_ctx"] / s["low_freq_factor"]
    high_wavelen = s["original_ctx"] / s["high_freq_factor"]
    factors = []
    for f in base:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(s["factor"])
        else:
            smooth = (s["original_ctx"] / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] - s["low_freq_factor"])
            factors.append(1.0 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def copy_truncated_spm_vocab(writer, n_vocab: int) -> None:
    """The real Gemma 3 vocab (SentencePiece, tokenizer.ggml.model = llama) cut to n_vocab."""
    import gguf

    model = pathlib.Path(os.environ.get("GENIEX_MODEL", pathlib.Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"))
    r = gguf.GGUFReader(str(model))
    for key, field in r.fields.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        vt = field.types[0]
        val = field.contents()
        if vt == gguf.GGUFValueType.ARRAY:
            if len(val) > n_vocab:
                val = val[:n_vocab]
            writer.add_array(key, val)
        else:
            writer.add_key_value(key, val, vt)


def write_lfm2_f16(shape: str, path: pathlib.Path, seed: int) -> None:
    import gguf

    c = SHAPES[shape]
    rng = np.random.default_rng(seed)
    E, d = c["n_embd"], c["n_embd"] // c["n_head"]
    kv = c["n_head_kv"] * d

    def rand(*dims):
        return (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)

    tmp = path.with_suffix(".tmp")
    w = gguf.GGUFWriter(str(tmp), "lfm2")
    w.add_name(c["name"])
    w.add_context_length(c["ctx"])
    w.add_embedding_length(E)
    w.add_block_count(c["n_layer"])
    w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(c["n_head"])
    w.add_head_count_kv([c["n_head_kv"] if i in c["attn_layers"] else 0 for i in range(c["n_layer"])])
    w.add_shortconv_l_cache(c["l_cache"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_vocab_size(c["n_vocab"])
    w.add_file_type(1)
    copy_truncated_spm_vocab(w, c["n_vocab"])
    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    w.add_tensor("token_embd.weight", rand(c["n_vocab"], E))
    w.add_tensor("token_embd_norm.weight", ones(E))
    for i in range(c["n_layer"]):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones(E))
        if i in c["attn_layers"]:
            w.add_tensor(p + "attn_q.weight", rand(E, E))
            w.add_tensor(p + "attn_k.weight", rand(kv, E))
            w.add_tensor(p + "attn_v.weight", rand(kv, E))
            w.add_tensor(p + "attn_output.weight", rand(E, E))
            w.add_tensor(p + "attn_q_norm.weight", ones(d))
            w.add_tensor(p + "attn_k_norm.weight", ones(d))
        else:
            w.add_tensor(p + "shortconv.in_proj.weight", rand(3 * E, E))
            w.add_tensor(p + "shortconv.conv.weight", rng.standard_normal((E, c["l_cache"]), dtype=np.float32) * 0.5)
            w.add_tensor(p + "shortconv.out_proj.weight", rand(E, E))
        w.add_tensor(p + "ffn_norm.weight", ones(E))
        w.add_tensor(p + "ffn_gate.weight", rand(c["n_ff"], E))
        w.add_tensor(p + "ffn_up.weight", rand(c["n_ff"], E))
        w.add_tensor(p + "ffn_down.weight", rand(E, c["n_ff"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    tmp.rename(path)


def write_f16(shape: str, path: pathlib.Path, seed: int) -> None:
    import gguf

    c = SHAPES[shape]
    if shape.startswith("lfm2"):
        write_lfm2_f16(shape, path, seed)
        return
    rng = np.random.default_rng(seed)
    head_dim = c["n_embd"] // c["n_head"]

    def rand(*dims):
        return (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)

    tmp = path.with_suffix(".tmp")  # renamed when complete
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name(c["name"])
    w.add_context_length(c["ctx"])
    w.add_embedding_length(c["n_embd"])
    w.add_block_count(c["n_layer"])
    w.add_feed_forward_length(c["n_ff"])
    w.add_head_count(c["n_head"])
    w.add_head_count_kv(c["n_head_kv"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_vocab_size(c["n_vocab"])
    w.add_file_type(1)  # MOSTLY_F16
    copy_tokenizer(w, find_vocab(c["vocab"]), c["n_vocab"])

    # numpy shape = reversed ggml shape: (rows = output features, cols = input features)
    w.add_tensor("token_embd.weight", rand(c["n_vocab"], c["n_embd"]))
    if c["llama3_rope"]:
        w.add_tensor("rope_freqs.weight", llama3_rope_freqs(head_dim, c["rope_theta"], c["llama3_rope"]))
    w.add_tensor("output_norm.weight", np.ones(c["n_embd"], dtype=np.float32))
    kv = c["n_head_kv"] * head_dim
    for i in range(c["n_layer"]):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(c["n_embd"], dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", rand(c["n_embd"], c["n_embd"]))
        w.add_tensor(p + "attn_k.weight", rand(kv, c["n_embd"]))
        w.add_tensor(p + "attn_v.weight", rand(kv, c["n_embd"]))
        w.add_tensor(p + "attn_output.weight", rand(c["n_embd"], c["n_embd"]))
        w.add_tensor(p + "ffn_norm.weight", np.ones(c["n_embd"], dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", rand(c["n_ff"], c["n_embd"]))
        w.add_tensor(p + "ffn_up.weight", rand(c["n_ff"], c["n_embd"]))
        w.add_tensor(p + "ffn_down.weight", rand(c["n_embd"], c["n_ff"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    tmp.rename(path)


def quantize(src: pathlib.Path, dst: pathlib.Path, ftype: int, threads: int) -> None:
    tmp = dst.with_suffix(".tmp")
    try:
        import llama_cpp
    except ImportError:  # no goldens venv: the llama-quantize that scripts/setup.sh builds
        tool = LLAMA_CPP_SRC / "build/bin/llama-quantize"
        if not tool.exists():
            sys.exit("make_shape_models: needs the llama_cpp package or " + str(tool))
        name = next(q for q, f in QUANTS.items() if f == ftype)
        r = subprocess.run([str(tool), str(src), str(tmp), name, str(threads)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"make_shape_models: {tool.name} ({src} -> {dst}) failed:\n{r.stderr[-2000:]}")
        tmp.rename(dst)
        return

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), params)
    if rc != 0:
        sys.exit(f"make_shape_models: llama_model_quantize({src} -> {dst}) failed with {rc}")
    tmp.rename(dst)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    ap.add_argument("--quants", nargs="+", default=list(QUANTS), choices=list(QUANTS))
    ap.add_argument("--out", type=pathlib.Path, default=OUT_DIR)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--keep-f16", action="store_true", help="keep the F16 source file")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for shape in a.shapes:
        targets = {q: a.out / f"{shape}-{q.lower()}.gguf" for q in a.quants}
        f16 = a.out / f"{shape}-f16.gguf"
        if all(p.exists() for p in targets.values()):
            print(f"{shape}: up to date", flush=True)
            continue
        if not f16.exists():
            print(f"{shape}: writing {f16}", flush=True)
            write_f16(shape, f16, a.seed)
        for q, p in targets.items():
            if not p.exists():
                print(f"{shape}: quantizing to {q} -> {p}", flush=True)
                quantize(f16, p, QUANTS[q], a.threads)
        if not a.keep_f16:
            f16.unlink()
    for p in sorted(a.out.glob("*.gguf")):
        print(f"{p}  {p.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
