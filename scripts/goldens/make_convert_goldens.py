#!/usr/bin/env python3
"""Goldens for `geniex convert`: llama.cpp's converter on the committed tiny HF checkpoints
(tests/data/hf/<arch>/, made by make_tiny_hf_dirs.py) at every --outtype, recorded as
tests/data/hf/convert_goldens.json.

Goldens tooling only (not used by the build, the tests or CI).  Per architecture and outtype:
  metadata: every key in file order with its GGUF value type and value (arrays: element type,
            length and the sha256 of their JSON text; strings over 256 characters: length + sha256);
  tensors:  name, GGML type, shape (GGML order, ne[0] first) and the sha256 of the data bytes.
tests/python/test_convert_cli.py converts the same directories with `geniex convert` and compares.

  ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_convert_goldens.py
"""
from __future__ import annotations

import hashlib
import json
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
         "gemma3": None}
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
    (HF / "convert_goldens.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
