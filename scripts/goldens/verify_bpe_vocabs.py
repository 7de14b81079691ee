#!/usr/bin/env python3
"""Check the converted BPE vocab GGUFs with llama.cpp (via llama-cpp-python).

For each of ggml-vocab-llama-bpe.gguf and ggml-vocab-qwen2.gguf in tests/data/tokenizer/:
  * load it with llama_cpp.Llama(model_path, vocab_only=True)
  * tokenize every case of the matching .inp file (llama.cpp test-tokenizer-0 fixtures) with
    add_special = false, parse_special = false (what test-tokenizer-0 does; see
    /work/shared/testdata/tokenizer/README.md) and compare with the .out line, exactly
  * optionally (--hf-dir NAME=DIR) also tokenize the same cases with the Hugging Face
    `tokenizers` library from the source tokenizer.json and compare (sanity check of the .out).
  * optionally (--corpus FILE) tokenize every line of a corpus with llama.cpp and with HF
    (add_special_tokens=False, special tokens split as text on both sides) and report agreement.

Exit status 0 only if every .inp/.out case matches.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

SEP = "\n__ggml_vocab_test__\n"


def read_inp(path: Path) -> list[str]:
    """Split a .inp file exactly as the README describes."""
    data = path.read_bytes().decode("utf-8")
    cases, pos = [], 0
    while True:
        i = data.find(SEP, pos)
        if i < 0:
            if pos < len(data):
                cases.append(data[pos:])
            break
        cases.append(data[pos:i])
        pos = i + len(SEP)
    return cases


def read_out(path: Path) -> list[list[int]]:
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == "", "expected trailing newline"
    return [[int(x) for x in ln.split()] for ln in lines[:-1]]


def main() -> int:
    here = Path(__file__).resolve()
    data_dir = here.parents[2] / "tests" / "data" / "tokenizer"
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=data_dir)
    ap.add_argument("--vocab", action="append", default=None, help="vocab name (default: llama-bpe, qwen2)")
    ap.add_argument("--hf-dir", action="append", default=[], help="NAME=DIR with tokenizer.json")
    ap.add_argument("--corpus", type=Path, default=None)
    args = ap.parse_args()
    vocabs = args.vocab or ["llama-bpe", "qwen2"]
    hf_dirs = dict(s.split("=", 1) for s in args.hf_dir)

    import llama_cpp
    print(f"llama-cpp-python {llama_cpp.__version__}")
    ok = True
    for name in vocabs:
        gguf_path = args.data_dir / f"ggml-vocab-{name}.gguf"
        cases = read_inp(args.data_dir / f"ggml-vocab-{name}.gguf.inp")
        expected = read_out(args.data_dir / f"ggml-vocab-{name}.gguf.out")
        assert len(cases) == len(expected), (len(cases), len(expected))
        llm = llama_cpp.Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)
        n_ok = 0
        for text, exp in zip(cases, expected):
            got = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
            if got == exp:
                n_ok += 1
            else:
                print(f"  MISMATCH {name} {text!r}: got {got} expected {exp}")
        print(f"{name}: llama.cpp matches {n_ok}/{len(cases)} .out cases")
        ok &= n_ok == len(cases)

        hf = None
        if name in hf_dirs:
            from tokenizers import Tokenizer
            hf = Tokenizer.from_file(str(Path(hf_dirs[name]) / "tokenizer.json"))
            hf.encode_special_tokens = True
            n_hf = sum(hf.encode(t, add_special_tokens=False).ids == e for t, e in zip(cases, expected))
            print(f"{name}: HF tokenizers (source tokenizer.json) matches {n_hf}/{len(cases)} .out cases")
        if args.corpus is not None and hf is not None:
            lines = args.corpus.read_bytes().decode("utf-8").split("\n")[:-1]
            diff = []
            for t in lines:
                a = llm.tokenize(t.encode("utf-8"), add_bos=False, special=False)
                b = hf.encode(t, add_special_tokens=False).ids
                if a != b:
                    diff.append(t)
            print(f"{name}: corpus {args.corpus.name}: llama.cpp == HF on {len(lines) - len(diff)}/{len(lines)} lines")
            if diff:
                # llama.cpp applies no Unicode normalizer; HF applies the tokenizer.json normalizer (Qwen: NFC)
                import unicodedata
                still = [t for t in diff if llm.tokenize(unicodedata.normalize("NFC", t).encode("utf-8"),
                                                         add_bos=False, special=False)
                         != hf.encode(t, add_special_tokens=False).ids]
                print(f"{name}: of the {len(diff)} differing lines, {len(diff) - len(still)} agree once the "
                      f"llama.cpp input is NFC-normalized; {len(still)} still differ")
                diff = still
            for t in diff[:20]:
                print(f"    differs: {t!r}")
        del llm
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
