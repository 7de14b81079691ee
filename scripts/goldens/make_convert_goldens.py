#!/usr/bin/env python3
"""Goldens for `geniex convert`: llama.cpp's converter on the committed tiny HF checkpoints
(tests/data/hf/<arch>/, made by make_tiny_hf_dirs.py) at every --outtype, recorded as
tests/data/hf/convert_goldens.json.

Goldens tooling only (not used by the build, the tests or CI).  Per architecture and outtype:
  metadata: every key in file order with its GGUF value type and value (arrays: element type,
            length and the sha256 of their JSON text; strings over 256 characters: length + sha256);
  tensors:  name, GGML type, shape (GGML order, ne[0] first) and the sha256 of the data bytes.
Also the vision projector (--mmproj) of the LFM2-VL checkpoint at every outtype, and the tiny
llama split into three shards (split_safetensors) at q8_0.
tests/python/test_convert_cli.py converts the same directories with `geniex convert` and compares.

  ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_convert_goldens.py
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tiny_models as mtm  # noqa: E402

REPO = HERE.parents[1]
HF = REPO / "tests/data/hf"
LLAMA_DIR = mtm.GOLDENS_HOME / "llama_cpp_python-0.3.36/vendor/llama.cpp"
# directory -> BPE pre-tokenizer name (truncated vocabularies: see convert_tiny_gguf.py); None: SentencePiece
ARCHS = {"llama": "llama-bpe", "mistral": "llama-bpe", "qwen2": "qwen2", "qwen3": "qwen2", "lfm2": "llama-bpe",
         "gemma3": None, "lfm2vl": "llama-bpe"}
MMPROJ = ["lfm2vl"]  # directories whose vision projector (--mmproj) is recorded too
OUTTYPES = ["f32", "f16", "bf16", "q8_0"]


def digest_value(v):
    """A JSON-able golden of one metadata value."""
    if isinstance(v, list):
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
        return {"len": len(v), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    if isinstance(v, str) and len(v) > 256:
        return {"len": len(v), "sha256": hashlib.sha256(v.encode("utf-8")).hexdigest()}
    return v


def describe(path: Path) -> dict:
    """Metadata and tensors of a GGUF file, in the golden format (shared with the test)."""
    import gguf
    r = gguf.GGUFReader(str(path))
    meta = []
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        types = [t.name for t in f.types]
        v = f.contents()
        if isinstance(v, float):
            v = float(v)
        meta.append({"key": k, "types": types, "value": digest_value(v)})
    tensors = [{"name": t.name, "type": t.tensor_type.name, "ne": [int(x) for x in t.shape],
                "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()} for t in r.tensors]
    return {"metadata": meta, "tensors": tensors}


def split_safetensors(src: Path, dst: Path, n_shards: int) -> None:
    """Copies checkpoint `src` to `dst` with model.safetensors split into n_shards shard files
    (tensors round-robin by name) + model.safetensors.index.json, as save_pretrained lays out
    large models; plain Python, deterministic."""
    import struct
    for f in src.iterdir():
        if f.name != "model.safetensors":
            (dst / f.name).write_bytes(f.read_bytes())
    raw = (src / "model.safetensors").read_bytes()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    header.pop("__metadata__", None)
    data = raw[8 + hlen:]
    names = sorted(header)
    weight_map = {}
    for k in range(n_shards):
        part = names[k::n_shards]
        fname = f"model-{k + 1:05d}-of-{n_shards:05d}.safetensors"
        h, blob = {}, bytearray()
        for n in part:
            b, e = header[n]["data_offsets"]
            h[n] = dict(header[n], data_offsets=[len(blob), len(blob) + e - b])
            blob += data[b:e]
            weight_map[n] = fname
        hb = json.dumps(h).encode()
        hb += b" " * (-len(hb) % 8)
        (dst / fname).write_bytes(struct.pack("<Q", len(hb)) + hb + bytes(blob))
    (dst / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": len(data)}, "weight_map": weight_map}))


def main() -> int:
    out = {"generator": "scripts/goldens/make_convert_goldens.py",
           "judge": "llama.cpp 0c1e57098 convert_hf_to_gguf.py (llama-cpp-python 0.3.36 sdist) via "
                    "convert_tiny_gguf.py --tokenizer-pre",
           "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for arch, pre in ARCHS.items():
            out["models"][arch] = {"tokenizer_pre": pre, "outtypes": {}}
            for t in OUTTYPES:
                p = Path(tmp) / f"{arch}-{t}.gguf"
                mtm.convert(LLAMA_DIR, HF / arch, p, t, pre)
                out["models"][arch]["outtypes"][t] = describe(p)
                print(f"  {arch} {t}: {p.stat().st_size} B", flush=True)
        out["mmproj"] = {}
        for arch in MMPROJ:
            out["mmproj"][arch] = {}
            for t in OUTTYPES:
                p = Path(tmp) / f"mmproj-{arch}-{t}.gguf"
                cmd = [sys.executable, str(HERE / "convert_tiny_gguf.py"), "--llama-cpp-dir", str(LLAMA_DIR), "--",
                       str(HF / arch), "--outtype", t, "--outfile", str(p), "--mmproj"]
                subprocess.run(cmd, check=True, capture_output=True)
                out["mmproj"][arch][t] = describe(p)
                print(f"  mmproj {arch} {t}: {p.stat().st_size} B", flush=True)
        # the sharded layout: the tiny llama in three shards + index
        sharded = Path(tmp) / "llama"
        sharded.mkdir()
        split_safetensors(HF / "llama", sharded, 3)
        p = Path(tmp) / "llama-3-shards-q8_0.gguf"
        mtm.convert(LLAMA_DIR, sharded, p, "q8_0", "llama-bpe")
        out["sharded"] = {"llama-3-shards-q8_0": describe(p)}
    (HF / "convert_goldens.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
