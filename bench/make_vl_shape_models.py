#!/usr/bin/env python3
"""Random-weight LFM2-VL-450M-shaped files for vision speed benchmarks (timing only).

  lfm2-vl-450m-<quant>.gguf   the lfm2-350m bench text model (make_shape_models.py) with the
                              LFM2-VL image tokens at their real ids (<image> 396,
                              <|img_row_R_col_C|> 397.., <|img_thumbnail|> 497, <|image_start|> 498,
                              <|image_end|> 499, <|image_split|> 500) as control tokens
  mmproj-lfm2-vl-450m-f16.gguf  SigLIP2 NaFlex base + LFM2-VL projector with the real shapes
                              (shared/spec/LFM2.md §2, §5): Ev 768, 12 layers, 12 heads, Fv 3072,
                              16x16 positions, patch 16, projector 3072 -> 2560 -> 1024 with its
                              LayerNorm; the keys llama.cpp's converter writes; matrices F16
                              (normal, std 0.02), norms 1, biases 0

Needs the lfm2-350m files from make_shape_models.py and the `gguf` package (.venv has it):
  .venv/bin/python bench/make_vl_shape_models.py
"""
from __future__ import annotations

import os
import pathlib

import numpy as np

OUT_DIR = pathlib.Path(os.environ.get("GENIEX_BENCH_MODELS", pathlib.Path.home() / ".cache/geniex/bench-models"))


def vl_tokens() -> dict[int, str]:
    t = {396: "<image>", 497: "<|img_thumbnail|>", 498: "<|image_start|>", 499: "<|image_end|>",
         500: "<|image_split|>"}
    for r in range(1, 11):
        for c in range(1, 11):
            t[397 + 10 * (r - 1) + (c - 1)] = f"<|img_row_{r}_col_{c}|>"
    return t


def write_text(src: pathlib.Path, dst: pathlib.Path) -> None:
    import gguf

    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst.with_suffix(".tmp")), "lfm2")
    marks = vl_tokens()
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        vt = field.types[0]
        val = field.contents()
        if key == "tokenizer.ggml.tokens":
            val = [marks.get(i, s) for i, s in enumerate(val)]
        elif key == "tokenizer.ggml.token_type":
            val = [3 if i in marks else v for i, v in enumerate(val)]
        elif key == "tokenizer.ggml.scores":
            val = [0.0 if i in marks else v for i, v in enumerate(val)]
        if vt == gguf.GGUFValueType.ARRAY:
            w.add_array(key, val)
        else:
            w.add_key_value(key, val, vt)
    for t in r.tensors:
        w.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dst.with_suffix(".tmp").rename(dst)


def write_mmproj(dst: pathlib.Path, seed: int = 7) -> None:
    import gguf

    rng = np.random.default_rng(seed)
    ev, fv, heads, layers, text_e, hp = 768, 3072, 12, 12, 1024, 2560

    def rand(*dims):  # numpy (row-major) dims = reversed GGUF ne
        return (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)

    w = gguf.GGUFWriter(str(dst.with_suffix(".tmp")), "clip")
    w.add_string("general.name", "LFM2-VL-450M shape (random)")
    w.add_string("clip.projector_type", "lfm2")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.patch_size", 16)
    w.add_uint32("clip.vision.image_size", 256)
    w.add_uint32("clip.vision.embedding_length", ev)
    w.add_uint32("clip.vision.feed_forward_length", fv)
    w.add_uint32("clip.vision.attention.head_count", heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.block_count", layers)
    w.add_uint32("clip.vision.projection_dim", text_e)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("clip.vision.projector.scale_factor", 2)
    w.add_tensor("v.patch_embd.weight", rand(ev, 3, 16, 16))
    w.add_tensor("v.patch_embd.bias", np.zeros(ev, np.float32))
    w.add_tensor("v.position_embd.weight", rand(256, ev).astype(np.float32))  # F32, as the converter writes it (llama.cpp interpolates F32 only)
    for i in range(layers):
        p = f"v.blk.{i}."
        for n in ("ln1", "ln2"):
            w.add_tensor(p + n + ".weight", np.ones(ev, np.float32))
            w.add_tensor(p + n + ".bias", np.zeros(ev, np.float32))
        for n in ("attn_q", "attn_k", "attn_v", "attn_out"):
            w.add_tensor(p + n + ".weight", rand(ev, ev))
            w.add_tensor(p + n + ".bias", np.zeros(ev, np.float32))
        w.add_tensor(p + "ffn_up.weight", rand(fv, ev))
        w.add_tensor(p + "ffn_up.bias", np.zeros(fv, np.float32))
        w.add_tensor(p + "ffn_down.weight", rand(ev, fv))
        w.add_tensor(p + "ffn_down.bias", np.zeros(ev, np.float32))
    w.add_tensor("v.post_ln.weight", np.ones(ev, np.float32))
    w.add_tensor("v.post_ln.bias", np.zeros(ev, np.float32))
    w.add_tensor("mm.input_norm.weight", np.ones(4 * ev, np.float32))
    w.add_tensor("mm.input_norm.bias", np.zeros(4 * ev, np.float32))
    w.add_tensor("mm.1.weight", rand(hp, 4 * ev))
    w.add_tensor("mm.1.bias", np.zeros(hp, np.float32))
    w.add_tensor("mm.2.weight", rand(text_e, hp))
    w.add_tensor("mm.2.bias", np.zeros(text_e, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    dst.with_suffix(".tmp").rename(dst)


def main() -> None:
    mm = OUT_DIR / "mmproj-lfm2-vl-450m-f16.gguf"
    if not mm.exists():
        write_mmproj(mm)
        print("wrote", mm)
    for q in ("q4_0", "q8_0"):
        src, dst = OUT_DIR / f"lfm2-350m-{q}.gguf", OUT_DIR / f"lfm2-vl-450m-{q}.gguf"
        if not dst.exists():
            write_text(src, dst)
            print("wrote", dst)


if __name__ == "__main__":
    main()
