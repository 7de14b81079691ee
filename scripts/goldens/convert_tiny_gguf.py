#!/usr/bin/env python3
"""Run llama.cpp's convert_hf_to_gguf.py with one change: a fixed BPE pre-tokenizer name.

Goldens tooling only.  Usage:
  python convert_tiny_gguf.py --llama-cpp-dir DIR [--tokenizer-pre NAME] -- <convert_hf_to_gguf.py args>

The tiny test models (make_tiny_models.py) carry *truncated* copies of real BPE vocabularies
(Llama 3, Qwen3): same pre-tokenizer, normalizer and byte-level alphabet, fewer tokens and merges.
llama.cpp's converter identifies the pre-tokenizer by hashing the token ids of a check string; the
ids of a truncated vocab differ from the full one's, so the hash is unknown and the converter would
refuse the model.  --tokenizer-pre replaces that lookup (TextModel.get_vocab_base_pre) by the given
name ("llama-bpe", "qwen2"); everything else is the unmodified converter.
"""
from __future__ import annotations

import runpy
import sys
from pathlib import Path


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    own, rest = argv[:split], argv[split + 1:]
    llama_dir, pre = None, None
    i = 0
    while i < len(own):
        if own[i] == "--llama-cpp-dir":
            llama_dir = Path(own[i + 1]); i += 2
        elif own[i] == "--tokenizer-pre":
            pre = own[i + 1]; i += 2
        else:
            sys.exit(f"unknown option {own[i]}")
    if llama_dir is None:
        sys.exit("--llama-cpp-dir is required")
    sys.path.insert(0, str(llama_dir / "gguf-py"))
    sys.path.insert(0, str(llama_dir))
    if pre is not None:
        import conversion.base as base  # llama.cpp's conversion package

        def get_vocab_base_pre(self, tokenizer) -> str:  # noqa: ARG001
            return pre

        base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    script = llama_dir / "convert_hf_to_gguf.py"
    sys.argv = [str(script)] + rest
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
