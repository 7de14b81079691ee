#!/usr/bin/env python3
"""Tiny random-weight LFM2-VL (Lfm2VlForConditionalGeneration) + reference goldens.

Goldens tooling only (not used by the build, the tests or CI). Recipe: shared/spec/LFM2.md §6.
Seeded and deterministic:

 1. tokenizer: the tiny `lfm2` text model's vocabulary (rebuilt from tests/data/models/
    tiny-llama-f32.gguf, make_tiny_models.bpe_from_gguf) + the LFM2-VL special tokens added with
    add_tokens(..., special_tokens=True): <image>, <|img_row_R_col_C|> (R outer, 1..10),
    <|img_thumbnail|>, <|image_start|>, <|image_end|>, <|im_start|>, <|im_end|>; the LFM2-VL chat
    template (spec §4.7);
 2. Lfm2VlForConditionalGeneration per spec §6 (text 64 wide, 4 layers conv/attn/conv/attn; SigLIP2
    NaFlex 32 wide, 3 layers; projector 128 -> 48 -> 64 with LayerNorm), ALL parameters re-drawn by
    a seeded generator (norm weights 1 + 0.3 randn, biases 0.3 randn, matrices randn * 0.5 /
    sqrt(fan_in), token and position embeddings randn * 0.5, conv taps randn / sqrt(L));
    Lfm2VlProcessor with Lfm2VlImageProcessor(use_thumbnail=True) and the real default geometry;
 3. save_pretrained, pitfalls fixed (text_config.architectures; model.vision_tower.X ->
    model.vision_tower.vision_model.X), llama.cpp's converter --outtype f32 (text) and --mmproj:
    tests/data/models/tiny-lfm2vl-f32.gguf, mmproj-tiny-lfm2vl-f32.gguf;
 4. five chat cases rendered by the processor (apply_chat_template, tokenize=True): image features
    (model.model.get_image_features, all views concatenated), the vision tower output (case small),
    selected rows of the float32 eager logits, and (case small) a cached prefill + token-by-token
    decode golden -> tests/data/models/tiny-lfm2vl/*.npy (<f4);
 5. tests/data/models/tiny-lfm2vl.json: versions, config, token ids, both GGUFs' keys and tensors,
    per case the images, input_ids, views, stored logit rows.

Run:  ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_tiny_lfm2vl.py   (~1 min, 2 cores)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tiny_models as mtm  # noqa: E402  (bpe_from_gguf, sha256)
from make_lfm2vl_image_goldens import nearest  # noqa: E402

REPO = HERE.parents[1]
GOLDENS_HOME = Path(os.environ.get("GOLDENS_HOME", Path.home() / ".cache/geniex-goldens"))
SEED = 4321
VISION_DIR = REPO / "tests/data/vision"
N_LAST = 8          # logits rows kept at the end of every prompt
DECODE_TAIL = 8     # case small: prefill all but the last 8 ids, then one id at a time
CONVERTER = "llama.cpp 0c1e57098 (llama-cpp-python 0.3.36 sdist; its convert_hf_to_gguf.py + gguf-py)"

CHAT_TEMPLATE = (
    "{{bos_token}}{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n'}}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' %}{{ '<image>' }}"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{'<|im_end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}")

ROWCOL = [f"<|img_row_{r}_col_{c}|>" for r in range(1, 11) for c in range(1, 11)]
VL_TOKENS = ["<image>"] + ROWCOL + ["<|img_thumbnail|>", "<|image_start|>", "<|image_end|>"]
CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]

# (case, [(file, derived (w, h) or None)], messages with "IMG" placeholders for the images)
CASES = [
    ("small", [("chelsea.png", (384, 256))],  # 384 x 256: no resize, one view (96 tokens)
     [{"role": "user", "content": [{"type": "image"},
                                   {"type": "text", "text": "Describe this picture of a cat in a few words, please."}]}]),
    ("resized", [("chelsea.png", (640, 480))],  # not tiled, resized to 576 x 416 (234 tokens)
     [{"role": "user", "content": [{"type": "text", "text": "What is shown here?"}, {"type": "image"},
                                   {"type": "text", "text": "Answer briefly."}]}]),
    ("tiled", [("coffee.png", (1536, 1024))],  # 3 x 2 tiles of 512 + thumbnail 608 x 416
     [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the cup?"}]}]),
    ("wide", [("coffee.png", (2000, 100))],  # -> 1984 x 96 (half-even rounding, pos-emb downscale)
     [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Read the strip."}]}]),
    ("three", [("chelsea.png", None), ("coffee.png", None), ("camera.png", None)],
     [{"role": "system", "content": "You compare pictures."},
      {"role": "user", "content": [{"type": "text", "text": "First:"}, {"type": "image"},
                                   {"type": "text", "text": " second:"}, {"type": "image"},
                                   {"type": "text", "text": " and third:"}, {"type": "image"},
                                   {"type": "text", "text": " Which one has a cat?"}]}]),
]


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


# ----------------------------------------------------------------------------- tokenizer / processor

def build_processor(mdir: Path):
    import transformers as tf
    base = mtm.bpe_from_gguf(REPO / "tests/data/models/tiny-llama-f32.gguf", mdir)
    tok = tf.AutoTokenizer.from_pretrained(str(mdir))
    vocab = tok.get_vocab()
    new = VL_TOKENS + [t for t in CHAT_TOKENS if t not in vocab]
    n_added = tok.add_tokens(new, special_tokens=True)
    assert n_added == len(new), (n_added, len(new))
    tok.eos_token = "<|im_end|>"  # as LFM2-VL (eos = <|im_end|>); the GGUF's eos_token_id follows
    tok.chat_template = CHAT_TEMPLATE
    proc = tf.Lfm2VlProcessor(image_processor=tf.Lfm2VlImageProcessor(use_thumbnail=True), tokenizer=tok,
                              chat_template=CHAT_TEMPLATE)
    ids = {t: tok.convert_tokens_to_ids(t) for t in VL_TOKENS + CHAT_TOKENS}
    ids["bos"] = base["bos"]
    ids["base_eos"] = base["eos"]  # <|eot_id|> of the base vocab: pad id
    ids["eos"] = tok.eos_token_id
    ids["bos_token"] = tok.bos_token
    ids["eos_token"] = tok.eos_token
    for t in VL_TOKENS + CHAT_TOKENS:  # every marker is one id
        assert tok.encode(t, add_special_tokens=False) == [ids[t]], t
    return tok, proc, ids, base


# ----------------------------------------------------------------------------- model

def build_model(tok, ids):
    import torch
    import transformers as tf
    text_config = dict(model_type="lfm2", architectures=["Lfm2ForCausalLM"], vocab_size=len(tok), hidden_size=64,
                       intermediate_size=128, block_auto_adjust_ff_dim=False, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2,
                       layer_types=["conv", "full_attention", "conv", "full_attention"], conv_L_cache=3,
                       norm_eps=1e-5, max_position_embeddings=4096,
                       rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True,
                       bos_token_id=ids["bos"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["base_eos"])
    vision_config = dict(model_type="siglip2_vision_model", hidden_size=32, intermediate_size=64,
                         num_hidden_layers=3, num_attention_heads=2, num_channels=3, patch_size=16,
                         num_patches=256, layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh", vision_use_head=False)
    cfg = tf.Lfm2VlConfig(vision_config=vision_config, text_config=text_config, image_token_id=ids["<image>"],
                          projector_hidden_size=48, projector_hidden_act="gelu", projector_bias=True,
                          projector_use_layernorm=True, downsample_factor=2, tie_word_embeddings=True)
    torch.manual_seed(SEED)
    model = tf.Lfm2VlForConditionalGeneration(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    rules = {}
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("conv.conv.weight") and p.ndim == 3:  # lfm2 depthwise [E, 1, L]
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[2])); rule = "randn/sqrt(L)"
            elif "embed_tokens" in name or "position_embedding" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5); rule = "0.5*randn"
            elif p.ndim == 2:
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 / math.sqrt(p.shape[1]))); rule = "0.5*randn/sqrt(fan_in)"
            elif "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g)); rule = "1+0.3*randn"
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g)); rule = "0.3*randn"
            else:
                raise RuntimeError(f"unhandled parameter {name} {tuple(p.shape)}")
            rules[name] = [list(p.shape), rule]
    return model, rules


def fix_checkpoint(mdir: Path) -> list[str]:
    """Pitfalls 1 and 2 of spec §6: text_config.architectures, vision_tower.vision_model. keys."""
    from safetensors.torch import load_file, save_file
    cfg = json.loads((mdir / "config.json").read_text())
    cfg["text_config"]["architectures"] = ["Lfm2ForCausalLM"]
    (mdir / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    files = sorted(mdir.glob("*.safetensors"))
    assert len(files) == 1, files
    sd = load_file(str(files[0]))
    renamed = []
    out = {}
    for k, v in sd.items():
        if k.startswith("model.vision_tower.") and not k.startswith("model.vision_tower.vision_model."):
            nk = "model.vision_tower.vision_model." + k[len("model.vision_tower."):]
            renamed.append(k)
            out[nk] = v
        else:
            out[k] = v
    save_file(out, str(files[0]), metadata={"format": "pt"})
    return renamed


def convert(llama_dir: Path, mdir: Path, out: Path, mmproj: bool) -> None:
    cmd = [sys.executable, str(HERE / "convert_tiny_gguf.py"), "--llama-cpp-dir", str(llama_dir),
           "--tokenizer-pre", "llama-bpe", "--", str(mdir), "--outtype", "f32", "--outfile", str(out)]
    if mmproj:
        cmd.append("--mmproj")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not out.exists():
        sys.stderr.write(res.stdout[-4000:] + res.stderr[-8000:])
        raise SystemExit(f"conversion failed: {out}")


def gguf_dump(path: Path) -> dict:
    import gguf
    r = gguf.GGUFReader(str(path))
    keys = {}
    for name, f in r.fields.items():
        if name.startswith("GGUF."):
            continue
        types = [t.name for t in f.types]
        v = f.contents()
        if isinstance(v, list) and len(v) > 64:
            keys[name] = {"type": types, "len": len(v)}
        else:
            if isinstance(v, float):
                v = float(np.float32(v))
            elif isinstance(v, list):
                v = [float(np.float32(x)) if isinstance(x, float) else x for x in v]
            keys[name] = {"type": types, "value": v}
    tensors = [{"name": t.name, "type": t.tensor_type.name, "ne": [int(x) for x in t.shape]} for t in r.tensors]
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": mtm.sha256(path),
            "keys": keys, "tensors": tensors}



def numpy_features_from_mmproj(mm_path: Path, pixel_rows: np.ndarray, hp: int, wp: int, proj_gelu: str = "erf"):
    """Self-check of the mmproj GGUF: spec §2.3 + §3 in float64 numpy from the GGUF tensors only
    (torch only for the antialiased bilinear resize of the position table). One view."""
    import gguf
    import torch
    r = gguf.GGUFReader(str(mm_path))
    T = {t.name: np.array(t.data, dtype=np.float64).reshape([int(x) for x in reversed(t.shape)]) for t in r.tensors}
    f = r.fields
    ev = int(f["clip.vision.embedding_length"].contents())
    nh = int(f["clip.vision.attention.head_count"].contents())
    nl = int(f["clip.vision.block_count"].contents())
    eps = float(f["clip.vision.attention.layer_norm_epsilon"].contents())

    def ln(x, w, b, e):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + e) * w + b

    def lin(x, name):
        return x @ T[name + ".weight"].T + T[name + ".bias"]

    px = pixel_rows.astype(np.float64).reshape(-1, 16, 16, 3)           # (ky, kx, c) per patch
    x = np.einsum("ecyx,nyxc->ne", T["v.patch_embd.weight"], px) + T["v.patch_embd.bias"]
    pos = torch.from_numpy(T["v.position_embd.weight"].reshape(16, 16, ev).transpose(2, 0, 1).copy())[None]
    pos = torch.nn.functional.interpolate(pos, size=(hp, wp), mode="bilinear", align_corners=False, antialias=True)
    x = x + pos[0].numpy().reshape(ev, hp * wp).T
    d = ev // nh
    for i in range(nl):
        b = f"v.blk.{i}."
        h = ln(x, T[b + "ln1.weight"], T[b + "ln1.bias"], eps)
        q, k, v = (lin(h, b + n).reshape(-1, nh, d).transpose(1, 0, 2) for n in ("attn_q", "attn_k", "attn_v"))
        a = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = x + lin((a @ v).transpose(1, 0, 2).reshape(-1, ev), b + "attn_out")
        h = ln(x, T[b + "ln2.weight"], T[b + "ln2.bias"], eps)
        u = lin(h, b + "ffn_up")
        u = 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))
        x = x + lin(u, b + "ffn_down")
    x = ln(x, T["v.post_ln.weight"], T["v.post_ln.bias"], eps)
    g = x.reshape(hp // 2, 2, wp // 2, 2, ev).transpose(0, 2, 1, 3, 4).reshape(-1, 4 * ev)  # dy*2Ev + dx*Ev + c
    g = ln(g, T["mm.input_norm.weight"], T["mm.input_norm.bias"], 1e-5)
    g = lin(g, "mm.1")
    if proj_gelu == "erf":  # HF projector_hidden_act "gelu"
        g = 0.5 * g * (1 + np.vectorize(math.erf)(g / math.sqrt(2)))
    else:  # llama.cpp's projector (spec §3)
        g = 0.5 * g * (1 + np.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))
    return x, lin(g, "mm.2")

# ----------------------------------------------------------------------------- cases

def load_image(file: str, derived):
    from PIL import Image
    im = Image.open(VISION_DIR / file)
    rgb = np.asarray(im.convert("RGB"))
    if derived is not None:
        rgb = nearest(rgb, *derived)
    return Image.fromarray(rgb, "RGB"), rgb


def logit_rows(ids: list[int], image_end: int) -> list[int]:
    n = len(ids)
    rows = set(range(n - N_LAST, n))
    for i, t in enumerate(ids):
        if t == image_end:
            rows.add(i)
            if i + 1 < n:
                rows.add(i + 1)
    return sorted(rows)


def run_case(model, proc, tok_ids, name, images, messages, out_dir: Path, mm_gguf: Path) -> dict:
    import torch
    pils, entry_imgs = [], []
    for file, derived in images:
        pil, rgb = load_image(file, derived)
        pils.append(pil)
        entry_imgs.append({"file": file, "derived_size_wh": list(derived) if derived else None,
                           "width": int(rgb.shape[1]), "height": int(rgb.shape[0]),
                           "decoded_sha256": sha(rgb.tobytes())})
    msgs = json.loads(json.dumps(messages))
    k = 0
    for m in msgs:
        if isinstance(m["content"], list):
            for c in m["content"]:
                if c["type"] == "image":
                    c["image"] = pils[k]; k += 1
    assert k == len(pils)
    text = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    enc = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, return_dict=True,
                                   return_tensors="pt")
    ids = enc["input_ids"][0].tolist()
    pv, pam, ss = enc["pixel_values"], enc["pixel_attention_mask"], enc["spatial_shapes"]
    assert pv.dtype == torch.float32
    img_id = tok_ids["<image>"]
    n_img = sum(1 for t in ids if t == img_id)

    views = []
    for i, (hp, wp) in enumerate(ss.tolist()):
        assert int(pam[i].sum()) == hp * wp
        views.append({"height": hp * 16, "width": wp * 16, "patches_h": hp, "patches_w": wp,
                      "tokens": ((hp + 1) // 2) * ((wp + 1) // 2),
                      "pixel_values_sha256": sha(pv[i, :hp * wp].contiguous().numpy().astype("<f4").tobytes())})
    assert sum(v["tokens"] for v in views) == n_img, (sum(v["tokens"] for v in views), n_img)

    files = {}
    with torch.no_grad():
        feats = model.model.get_image_features(pixel_values=pv, spatial_shapes=ss, pixel_attention_mask=pam)
        f = torch.cat(list(feats.pooler_output), dim=0).float().numpy().astype("<f4")
        assert f.shape == (n_img, 64), f.shape
        np.save(out_dir / f"{name}.features.npy", f)
        files["features"] = f"{name}.features.npy"
        if name == "small":
            hp, wp = ss[0].tolist()
            vis = feats.last_hidden_state[0, :hp * wp].float().numpy().astype("<f4")
            assert vis.shape == (hp * wp, 32)
            np.save(out_dir / f"{name}.vision.npy", vis)
            files["vision"] = f"{name}.vision.npy"
        full = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], pixel_values=pv,
                     spatial_shapes=ss, pixel_attention_mask=pam).logits[0].float().numpy()
    # self-check: the mmproj GGUF alone (numpy float64) reproduces HF's features
    npf, off, vis_diff = [], 0, None
    for i, (hp, wp) in enumerate(ss.tolist()):
        x, y = numpy_features_from_mmproj(mm_gguf, pv[i, :hp * wp].numpy(), hp, wp)
        npf.append(y)
        if name == "small":
            vis_diff = float(np.abs(x - vis.astype(np.float64)).max())
    feat_diff = float(np.abs(np.concatenate(npf) - f.astype(np.float64)).max())
    rows = logit_rows(ids, tok_ids["<|image_end|>"])
    np.save(out_dir / f"{name}.logits.npy", full[rows].astype("<f4"))
    files["logits"] = f"{name}.logits.npy"
    entry = {"images": entry_imgs, "messages": messages, "prompt_text": text, "input_ids": ids,
             "n_tokens": len(ids), "n_image_tokens": n_img, "views": views, "logits_rows": rows,
             "max_abs_logit": float(np.abs(full).max()), "max_abs_logit_stored_rows": float(np.abs(full[rows]).max()),
             "max_abs_feature": float(np.abs(f).max()), "hf_top1_stored_rows": [int(x) for x in full[rows].argmax(-1)],
             "files": files, "mmproj_numpy_f64_vs_hf_features_max_abs_diff": feat_diff}
    if vis_diff is not None:
        entry["mmproj_numpy_f64_vs_hf_vision_max_abs_diff"] = vis_diff
    if name == "small":
        entry.update(decode_golden(model, enc, ids, full, out_dir, name))
    print(f"  {name:8s} tokens {len(ids):5d} image tokens {n_img:5d} views "
          f"{[(v['width'], v['height']) for v in views]} max|logit| {entry['max_abs_logit']:.2f} "
          f"max|feat| {entry['max_abs_feature']:.2f} numpy(mmproj) vs HF {feat_diff:.2g}", flush=True)
    return entry


def decode_golden(model, enc, ids, full, out_dir: Path, name: str) -> dict:
    """HF with its cache: prefill all but the last DECODE_TAIL ids (incl. the image), then one id at a time."""
    import torch
    n = len(ids)
    k = n - DECODE_TAIL
    rows = []
    with torch.no_grad():
        out = model(input_ids=enc["input_ids"][:, :k], attention_mask=enc["attention_mask"][:, :k],
                    pixel_values=enc["pixel_values"], spatial_shapes=enc["spatial_shapes"],
                    pixel_attention_mask=enc["pixel_attention_mask"], use_cache=True)
        rows.append(out.logits[0, -1].float().numpy())
        cache = out.past_key_values
        for i in range(k, n):
            out = model(input_ids=torch.tensor([[ids[i]]]), attention_mask=enc["attention_mask"][:, :i + 1],
                        past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            rows.append(out.logits[0, -1].float().numpy())
    dec = np.stack(rows).astype("<f4")
    np.save(out_dir / f"{name}.decode.logits.npy", dec)
    diff = float(np.abs(dec.astype(np.float64) - full[k - 1:n].astype(np.float64)).max())
    print(f"  {name}: HF cached decode vs full pass max|d| {diff:.3g}", flush=True)
    return {"decode": {"file": f"{name}.decode.logits.npy", "prefill": k, "rows_positions": list(range(k - 1, n)),
                       "hf_decode_vs_full_max_abs_diff": diff}}


def compact_json(obj) -> str:
    """indent=1 JSON with lists of numbers on one line (input_ids of the tiled case: 1811 ids)."""
    import re
    txt = json.dumps(obj, indent=1, ensure_ascii=False)
    return re.sub(r"\[\s*(-?[0-9][0-9.e+-]*(?:,\s*-?[0-9][0-9.e+-]*)*)\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", txt)



def load_pixel_rows(case: dict) -> np.ndarray:
    """HF pixel_values rows of a single-view case (re-run of the image processor)."""
    import transformers as tf
    (img,) = case["images"]
    pil, _ = load_image(img["file"], tuple(img["derived_size_wh"]) if img["derived_size_wh"] else None)
    e = tf.Lfm2VlImageProcessor(use_thumbnail=True)(images=[pil], return_tensors="pt")
    v = case["views"][0]
    rows = e["pixel_values"][0, :v["patches_h"] * v["patches_w"]].numpy()
    assert sha(rows.astype("<f4").tobytes()) == v["pixel_values_sha256"]
    return rows


def llama_cpp_mtmd_judge(llama_dir: Path, work: Path, text_gguf: Path, mm_gguf: Path, case: dict, tok_ids: dict,
                         gold_dir: Path, name: str) -> dict:
    """llama.cpp + libmtmd (llamacpp_mtmd_lfm2vl.cpp) on one single-image case: ids, embeddings, logits."""
    b = llama_dir / "build"
    exe = work / "llamacpp_mtmd_lfm2vl"
    if not exe.exists():
        libs = [b / "tools/mtmd/libmtmd.a", b / "src/libllama.a", b / "ggml/src/libggml.a",
                b / "ggml/src/libggml-cpu.a", b / "ggml/src/libggml-base.a"]
        libs += sorted(b.glob("vendor/**/*.a"))
        cmd = ["g++", "-O2", "-std=c++17", str(HERE / "llamacpp_mtmd_lfm2vl.cpp"), f"-I{llama_dir / 'include'}",
               f"-I{llama_dir / 'ggml/include'}", f"-I{llama_dir / 'tools/mtmd'}"] + [str(x) for x in libs] + \
              ["-fopenmp", "-lpthread", "-o", str(exe)]
        subprocess.run(cmd, check=True)
    (img,) = case["images"]
    _, rgb = load_image(img["file"], tuple(img["derived_size_wh"]) if img["derived_size_wh"] else None)
    (work / "image.rgb").write_bytes(np.ascontiguousarray(rgb).tobytes())
    (work / "prompt.txt").write_text(case["prompt_text"].replace("<image>", "<__media__>"), encoding="utf-8")
    prefix = work / "mtmd"
    res = subprocess.run([str(exe), str(text_gguf), str(mm_gguf), str(work / "image.rgb"), str(rgb.shape[1]),
                          str(rgb.shape[0]), str(work / "prompt.txt"), str(prefix)], capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout[-3000:] + res.stderr[-6000:])
        raise SystemExit("llamacpp_mtmd_lfm2vl failed")
    pos_ids = [int(x) for x in Path(str(prefix) + ".ids").read_text().split()]
    ids = [tok_ids["<image>"] if t < 0 else t for t in pos_ids]
    embd = np.fromfile(str(prefix) + ".embd.f32", dtype="<f4").reshape(-1, 64)
    text_pos = [p for p, t in enumerate(pos_ids) if t >= 0]
    lg = np.fromfile(str(prefix) + ".logits.f32", dtype="<f4").reshape(len(text_pos), -1)
    feats = np.load(gold_dir / case["files"]["features"]).astype(np.float64)
    ref = np.load(gold_dir / case["files"]["logits"]).astype(np.float64)
    rowmap = {p: i for i, p in enumerate(text_pos)}
    got = np.stack([lg[rowmap[p]] for p in case["logits_rows"]]).astype(np.float64)
    (hp, wp) = case["views"][0]["patches_h"], case["views"][0]["patches_w"]
    enc = load_pixel_rows(case)
    _, y_tanh = numpy_features_from_mmproj(mm_gguf, enc, hp, wp, proj_gelu="tanh")
    out = {"ids_equal_hf": ids == case["input_ids"],
           "features_vs_numpy_tanh_gelu_projector_max_abs_diff": float(np.abs(embd - y_tanh).max()),
           "features_max_abs_diff": float(np.abs(embd - feats).max()) if embd.shape == feats.shape else None,
           "logits_stored_rows_max_abs_diff": float(np.abs(got - ref).max()),
           "top1_agree_stored_rows": int((got.argmax(-1) == ref.argmax(-1)).sum()),
           "n_stored_rows": len(case["logits_rows"]),
           "settings": "llamacpp_mtmd_lfm2vl.cpp: libmtmd of the sdist's vendor/llama.cpp (CPU, 2 threads), "
                       "F32 KV, no flash attention, prompt with mtmd's media marker, image chunk via "
                       "mtmd_helper_decode_image_chunk"}
    print(f"  llama.cpp mtmd on {name}: {out}", flush=True)
    return out

# ----------------------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "tests/data/models")
    ap.add_argument("--llama-cpp-dir", type=Path, default=GOLDENS_HOME / "llama_cpp_python-0.3.36/vendor/llama.cpp")
    ap.add_argument("--keep-work", type=Path, default=None, help="keep the HF checkpoint here")
    ap.add_argument("--llama-cpp-judge", action="store_true",
                    help="also run llama.cpp + libmtmd (needs the sdist build's tools/mtmd/libmtmd.a: "
                         "ninja -C vendor/llama.cpp/build mtmd) on case small")
    args = ap.parse_args()

    import PIL
    import torch
    import torchvision
    import transformers as tf

    torch.set_num_threads(2)
    out_dir = args.out_dir
    gold_dir = out_dir / "tiny-lfm2vl"
    shutil.rmtree(gold_dir, ignore_errors=True)
    gold_dir.mkdir(parents=True)
    work = args.keep_work or Path(tempfile.mkdtemp(prefix="tiny-lfm2vl-"))
    mdir = work / "lfm2vl"
    shutil.rmtree(mdir, ignore_errors=True)

    tok, proc, tok_ids, base = build_processor(mdir)
    model, rules = build_model(tok, tok_ids)
    model.save_pretrained(mdir, safe_serialization=True)
    proc.save_pretrained(mdir)
    renamed = fix_checkpoint(mdir)

    # reference: reload what the converter sees, float32, eager attention; must equal the built model
    ref = tf.Lfm2VlForConditionalGeneration.from_pretrained(str(mdir), dtype=torch.float32,
                                                            attn_implementation="eager").eval()
    sd0, sd1 = model.state_dict(), ref.state_dict()
    assert sd0.keys() == sd1.keys()
    for k in sd0:
        assert torch.equal(sd0[k], sd1[k]), k
    del model
    proc = tf.Lfm2VlProcessor.from_pretrained(str(mdir))

    text_gguf = out_dir / "tiny-lfm2vl-f32.gguf"
    mm_gguf = out_dir / "mmproj-tiny-lfm2vl-f32.gguf"
    convert(args.llama_cpp_dir, mdir, text_gguf, mmproj=False)
    convert(args.llama_cpp_dir, mdir, mm_gguf, mmproj=True)
    dumps = {"text": gguf_dump(text_gguf), "mmproj": gguf_dump(mm_gguf)}
    print(f"  {text_gguf.name} {text_gguf.stat().st_size} B, {mm_gguf.name} {mm_gguf.stat().st_size} B", flush=True)

    # token types the converter gave the added tokens (llama.cpp: 3 control, 4 user-defined)
    import gguf
    r = gguf.GGUFReader(str(text_gguf))
    gtoks = r.fields["tokenizer.ggml.tokens"].contents()
    gtypes = r.fields["tokenizer.ggml.token_type"].contents()
    gguf_tok = {t: {"id": gtoks.index(t), "token_type": int(gtypes[gtoks.index(t)])}
                for t in VL_TOKENS + CHAT_TOKENS}
    for t, v in gguf_tok.items():
        assert v["id"] == tok_ids[t], (t, v, tok_ids[t])

    cases = {}
    for name, images, messages in CASES:
        cases[name] = run_case(ref, proc, tok_ids, name, images, messages, gold_dir, mm_gguf)

    if args.llama_cpp_judge:
        cases["small"]["llama_cpp"] = llama_cpp_mtmd_judge(args.llama_cpp_dir, work, text_gguf, mm_gguf,
                                                           cases["small"], tok_ids, gold_dir, "small")
    cfg = json.loads((mdir / "config.json").read_text())
    summary = {
        "generator": "scripts/goldens/make_tiny_lfm2vl.py",
        "versions": {"transformers": tf.__version__, "torch": torch.__version__, "torchvision": torchvision.__version__,
                     "pillow": PIL.__version__, "numpy": np.__version__, "converter": CONVERTER},
        "seed": SEED,
        "reference": "transformers Lfm2VlForConditionalGeneration reloaded from the fixed checkpoint, float32, eager "
                     "attention, CPU; features = model.model.get_image_features(...).pooler_output concatenated",
        "derivation": "derived images: out[y][x] = src[y * h // H][x * w // W] (integers) of PIL's convert('RGB') "
                      "of the committed file in tests/data/vision/ (not committed)",
        "hf_config": cfg,
        "processor": json.loads((mdir / "processor_config.json").read_text())
        if (mdir / "processor_config.json").exists() else None,
        "chat_template": CHAT_TEMPLATE,
        "tokenizer": {"source": "tiny-llama-f32.gguf vocabulary (as the tiny lfm2 model) + added special tokens",
                      "base": base, "n_vocab": len(tok), "ids": tok_ids, "gguf_tokens": gguf_tok},
        "weights": {"rule_by_parameter": rules,
                    "note": f"torch.Generator seed {SEED}, parameters in sorted name order (names as built, before "
                            "the vision_model. key renaming)"},
        "checkpoint_fixes": {"text_config.architectures": ["Lfm2ForCausalLM"],
                             "renamed_to_vision_model": len(renamed)},
        "gguf": dumps,
        "logits_rows_rule": f"the last {N_LAST} positions + each <|image_end|> position and the one after it",
        "cases": cases,
    }
    (out_dir / "tiny-lfm2vl.json").write_text(compact_json(summary) + "\n")
    if args.keep_work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
