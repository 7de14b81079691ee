#!/usr/bin/env python3
"""Tiny Hugging Face checkpoint directories -> tests/data/hf/<arch>/ (the sources `geniex convert`
is tested on), and proof that they are the sources of the committed tiny GGUFs.

Goldens tooling only (not used by the build, the tests or CI).  For each architecture:

 1. the tokenizer: tokenizer.json + tokenizer_config.json rebuilt from the committed
    tests/data/models/tiny-<arch>-f32.gguf (make_tiny_models.bpe_from_gguf: tokens, merges,
    control tokens, the Llama 3 split regex), plus that GGUF's chat template, so no npm download
    is needed;
 2. config + weights exactly as make_tiny_models.py makes them (make_config, build_model: same
    seed, same generator), saved with save_pretrained (model.safetensors, F32);
 3. llama.cpp's converter (convert_tiny_gguf.py, --outtype f32) on the directory: every tensor
    must be byte-identical to the committed tiny-<arch>-f32.gguf, and every metadata value equal
    (general.name aside) -- else the script fails, since the directory would not be the source.

Then run make_convert_goldens.py to record llama.cpp's conversions of these directories.

  ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_tiny_hf_dirs.py [ARCH ...]
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tiny_models as mtm  # noqa: E402

REPO = HERE.parents[1]
OUT = REPO / "tests/data/hf"
MODELS = REPO / "tests/data/models"
LLAMA_DIR = mtm.GOLDENS_HOME / "llama_cpp_python-0.3.36/vendor/llama.cpp"
# The special-token renumbering of the truncated Llama 3.1 vocabulary (tiny_models.json).
LLAMA_SPECIAL = {"128000": 2032, "128001": 2033, "128008": 2040, "128009": 2041}


def gguf_fields(path: Path) -> dict:
    import gguf
    r = gguf.GGUFReader(str(path))
    return {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}


def gguf_tensors(path: Path) -> dict:
    import gguf
    r = gguf.GGUFReader(str(path))
    return {t.name: (t.tensor_type.name, [int(x) for x in t.shape], bytes(t.data.tobytes())) for t in r.tensors}


def make_llama(arch: str, mdir: Path) -> None:
    """llama and mistral: the truncated Llama 3.1 vocabulary."""
    import torch
    torch.set_num_threads(2)
    src = MODELS / f"tiny-{arch}-f32.gguf"
    mtm.bpe_from_gguf(src, mdir)
    # Llama 3.1's post-processor: ByteLevel, then <|begin_of_text|> before each sequence.
    tj_path = mdir / "tokenizer.json"
    tj = json.loads(tj_path.read_text(encoding="utf-8"))
    tp = tj["post_processor"]
    bos = tp["single"][0]
    tp["pair"] = [bos, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": dict(bos["SpecialToken"], type_id=1)}, {"Sequence": {"id": "B", "type_id": 1}}]
    tj["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, tp]}
    tj_path.write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    tc_path = mdir / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text(encoding="utf-8"))
    tc["chat_template"] = gguf_fields(src)["tokenizer.chat_template"]
    tc_path.write_text(json.dumps(tc, ensure_ascii=False, indent=1), encoding="utf-8")
    cfg = mtm.make_config(arch, dict(LLAMA_SPECIAL))
    model = mtm.build_model(arch, cfg)
    model.save_pretrained(mdir, safe_serialization=True)


QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")
# The special-token renumbering of the truncated Qwen3 vocabulary (tiny_models.json).
QWEN_SPECIAL = {"151643": 2022, "151645": 2024}


def make_qwen(arch: str, mdir: Path) -> None:
    """Qwen3's tokenizer layout: NFC, the Qwen2 split regex, a ByteLevel post-processor (no BOS),
    control tokens special, the <think>/<tool_call>-like user-defined tokens not special."""
    import gguf
    import torch
    torch.set_num_threads(2)
    src = MODELS / f"tiny-{arch}-f32.gguf"
    mtm.bpe_from_gguf(src, mdir)
    r = gguf.GGUFReader(str(src))
    toks = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    tj_path = mdir / "tokenizer.json"
    tj = json.loads(tj_path.read_text(encoding="utf-8"))
    tj["normalizer"] = {"type": "NFC"}
    tj["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN_SPLIT
    tj["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tj["added_tokens"] = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": int(types[i]) == 3}
                          for i, t in enumerate(toks) if int(types[i]) in (3, 4)]
    tj_path.write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    tc = {"add_bos_token": False, "add_prefix_space": False, "bos_token": None, "eos_token": toks[QWEN_SPECIAL["151645"]],
          "pad_token": toks[QWEN_SPECIAL["151643"]], "unk_token": None, "errors": "replace",
          "model_max_length": 131072, "split_special_tokens": False, "tokenizer_class": "PreTrainedTokenizerFast",
          "chat_template": gguf_fields(src)["tokenizer.chat_template"],
          "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in tj["added_tokens"]}}
    (mdir / "tokenizer_config.json").write_text(json.dumps(tc, ensure_ascii=False, indent=1), encoding="utf-8")
    cfg = mtm.make_config(arch, dict(QWEN_SPECIAL))
    model = mtm.build_model(arch, cfg)
    model.save_pretrained(mdir, safe_serialization=True)


def make_lfm2(mdir: Path) -> None:
    """As make_tiny_models.py makes it: the tiny-llama vocabulary rebuilt from tiny-llama-f32.gguf."""
    import torch
    torch.set_num_threads(2)
    tinfo = mtm.bpe_from_gguf(MODELS / "tiny-llama-f32.gguf", mdir)
    cfg = mtm.make_config("lfm2", {"bos": tinfo["bos"], "eos": tinfo["eos"]})
    model = mtm.build_model("lfm2", cfg)
    model.save_pretrained(mdir, safe_serialization=True)


def make_gemma3(mdir: Path) -> None:
    """tokenizer.model (SentencePiece) as make_tiny_models.gemma_spm writes it, from ids 0..2047 of
    the committed tiny-gemma3-f32.gguf (the same ids of the real Gemma 3 vocabulary)."""
    import torch
    torch.set_num_threads(2)
    mtm.gemma_spm(MODELS / "tiny-gemma3-f32.gguf", mdir)
    cfg = mtm.make_config("gemma3", {})
    model = mtm.build_model("gemma3", cfg)
    model.save_pretrained(mdir, safe_serialization=True)


def make_lfm2vl(mdir: Path) -> None:
    """The LFM2-VL checkpoint exactly as make_tiny_lfm2vl.py builds it (processor, seeded weights,
    its checkpoint fix-ups)."""
    import torch
    import make_tiny_lfm2vl as mtv
    torch.set_num_threads(2)
    tok, proc, ids, _ = mtv.build_processor(mdir)
    model, _ = mtv.build_model(tok, ids)
    model.save_pretrained(mdir, safe_serialization=True)
    proc.save_pretrained(mdir)
    mtv.fix_checkpoint(mdir)


def convert_mmproj(mdir: Path, out: Path) -> None:
    cmd = [sys.executable, str(HERE / "convert_tiny_gguf.py"), "--llama-cpp-dir", str(LLAMA_DIR),
           "--", str(mdir), "--outtype", "f32", "--outfile", str(out), "--mmproj"]
    subprocess.run(cmd, check=True, capture_output=True)


def verify(arch: str, mdir: Path, pre: str | None, ref_name: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "x.gguf"
        mtm.convert(LLAMA_DIR, mdir, out, "f32", pre)
        ref = MODELS / (ref_name or f"tiny-{arch}-f32.gguf")
        a, b = gguf_tensors(out), gguf_tensors(ref)
        assert list(a) == list(b), f"tensor names differ: {list(a)} vs {list(b)}"
        bad = [n for n in a if a[n] != b[n]]
        assert not bad, f"tensors differ from {ref.name}: {bad}"
        fa, fb = gguf_fields(out), gguf_fields(ref)
        diff = [k for k in set(fa) | set(fb) if k != "general.name" and fa.get(k) != fb.get(k)]
        assert not diff, f"metadata differs from {ref.name}: {diff}"
    print(f"  {arch}: llama.cpp's conversion of {mdir.relative_to(REPO)} == {ref.name} (tensors and metadata)")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    archs = sys.argv[1:] or ["llama", "mistral", "qwen2", "qwen3", "lfm2", "gemma3", "lfm2vl"]
    for arch in archs:
        mdir = OUT / arch
        if arch in ("llama", "mistral"):
            make_llama(arch, mdir)
            verify(arch, mdir, "llama-bpe")
        elif arch == "lfm2vl":
            make_lfm2vl(mdir)
            verify(arch, mdir, "llama-bpe")
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "mm.gguf"
                convert_mmproj(mdir, out)
                ref = MODELS / "mmproj-tiny-lfm2vl-f32.gguf"
                assert out.read_bytes() == ref.read_bytes(), "mmproj differs from " + ref.name
                print(f"  lfm2vl: llama.cpp's --mmproj conversion == {ref.name} (byte for byte)")
        elif arch == "gemma3":
            make_gemma3(mdir)
            verify(arch, mdir, None)
        elif arch == "lfm2":
            make_lfm2(mdir)
            verify(arch, mdir, "llama-bpe")
        else:
            make_qwen(arch, mdir)
            verify(arch, mdir, "qwen2")
        for p in sorted(mdir.iterdir()):
            print(f"  {p.relative_to(REPO)}  {p.stat().st_size} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
