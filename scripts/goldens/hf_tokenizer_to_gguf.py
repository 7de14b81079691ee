#!/usr/bin/env python3
"""Write a vocab-only GGUF from a Hugging Face BPE tokenizer (tokenizer.json + tokenizer_config.json).

Goldens tooling only (not used by the build or CI).  It reproduces what llama.cpp's
convert_hf_to_gguf.py does for a GPT-2-style byte-level BPE vocabulary with `--vocab-only`:

  * ``ModelBase.get_vocab_base``  -> token list + token types
      - ids with no token                           -> "[PAD<i>]", UNUSED (5)
      - added token, ``special`` or "looks special" -> CONTROL (3)
      - other added token                           -> USER_DEFINED (4), "▁" replaced by " "
      - added token with ``normalized == false``    -> text = decode(encode(text))
      - everything else                             -> NORMAL (1)
  * ``ModelBase.get_vocab_base_pre``  -> tokenizer.ggml.pre from the sha256 of the ids of a fixed
    check string (the hash is recomputed here and must equal the one llama.cpp lists for the model)
  * ``ModelBase._set_vocab_gpt2``  -> tokenizer.ggml.model = "gpt2", then ``gguf.SpecialVocab``
    (merges in rank order as "left right", bos/eos/unk/sep/pad ids, add_bos/add_eos flags,
    chat_template) exactly as llama.cpp's gguf-py computes them.
  * the architecture hyper-parameters llama.cpp needs to open a vocab-only file (block_count,
    context_length, ...).  They are copied from llama.cpp's own models/ggml-vocab-<name>.gguf and
    play no part in tokenization.

Like the real converter it needs `transformers` (AutoTokenizer) and `gguf`.  If the llama.cpp
source tree is available (e.g. the llama-cpp-python sdist's vendor/llama.cpp), pass
``--llama-cpp-dir`` so that its gguf-py (the one convert_hf_to_gguf.py would import) is used
and the pre-tokenizer hash table is read from its conversion/base.py.

Example:
  python hf_tokenizer_to_gguf.py --profile llama-bpe --tokenizer-dir DIR --out ggml-vocab-llama-bpe.gguf
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from hashlib import sha256
from pathlib import Path

# The check string of llama.cpp's get_vocab_base_pre (convert_hf_to_gguf_update.py), verbatim.
CHKTXT = '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL'

# Subset of llama.cpp's hash -> pre-tokenizer table (conversion/base.py, get_vocab_base_pre),
# used when --llama-cpp-dir is not given.
KNOWN_PRE_HASHES = {
    "0ef9807a4087ebef797fc749390439009c3b9eda9ad1a097abbe738f486c01e5": "llama-bpe",  # meta-llama/Meta-Llama-3-8B
    "e636dc30a262dcc0d8c323492e32ae2b70728f4df7dfe9737d9f920a282b8aea": "qwen2",      # Qwen/Qwen1.5-7B
    "d4540891389ea895b53b399da6ac824becc30f2fba0e9ddbb98f92e55ca0e97c": "qwen2",      # Qwen/Qwen3-Embedding-0.6B
}

# Per-vocab settings.
#  config_json: the fields of the source model's HF config.json that the converter reads for the
#               vocabulary (vocab_size -> number of token slots; bos/eos ids are only used by
#               gguf.SpecialVocab when tokenizer_config.json does not name the token).
#  hparams:     architecture keys copied from llama.cpp's models/ggml-vocab-<name>.gguf.
PROFILES = {
    "llama-bpe": {
        "arch": "llama",
        "name": "llama-bpe",
        "pre": "llama-bpe",
        # meta-llama/Llama-3.1-8B-Instruct config.json
        "config_json": {"vocab_size": 128256, "bos_token_id": 128000,
                        "eos_token_id": [128001, 128008, 128009]},
        "hparams": {
            "block_count": 32, "context_length": 8192, "embedding_length": 4096,
            "feed_forward_length": 14336, "head_count": 32, "head_count_kv": 8,
            "rope_freq_base": 500000.0, "rms_eps": 1e-5, "rope_dimension_count": 128,
            "write_vocab_size": True,
        },
    },
    "qwen2": {
        "arch": "qwen2",
        "name": "qwen2",
        "pre": "qwen2",
        # Qwen/Qwen3-0.6B config.json
        "config_json": {"vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151645},
        "hparams": {
            "block_count": 32, "context_length": 32768, "embedding_length": 4096,
            "feed_forward_length": 11008, "head_count": 32, "head_count_kv": 32,
            "rope_freq_base": 1000000.0, "rms_eps": 1e-6, "rope_dimension_count": None,
            "write_vocab_size": False,
        },
    },
}


def does_token_look_special(token_text: str) -> bool:
    """Verbatim logic of llama.cpp ModelBase.does_token_look_special."""
    seems_special = token_text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
    seems_special = seems_special or (token_text.startswith("<|") and token_text.endswith("|>"))
    seems_special = seems_special or (token_text.startswith("<｜") and token_text.endswith("｜>"))
    seems_special = seems_special or (token_text.startswith("<unused") and token_text.endswith(">"))
    return seems_special


def load_pre_hash_table(llama_cpp_dir: Path | None) -> dict[str, str]:
    if llama_cpp_dir is None:
        return dict(KNOWN_PRE_HASHES)
    src = (llama_cpp_dir / "conversion" / "base.py")
    if not src.is_file():
        src = llama_cpp_dir / "convert_hf_to_gguf.py"
    text = src.read_text(encoding="utf-8")
    table = {}
    for m in re.finditer(r'if chkhsh == "([0-9a-f]{64})":\s*\n(?:\s*#[^\n]*\n)*\s*res = "([^"]+)"', text):
        table.setdefault(m.group(1), m.group(2))
    if not table:
        raise RuntimeError(f"no pre-tokenizer hashes found in {src}")
    return table


def get_vocab_base(tokenizer, vocab_size: int, gguf):
    """Verbatim logic of llama.cpp ModelBase.get_vocab_base (minus the pre-tokenizer detection)."""
    tokens: list[str] = []
    toktypes: list[int] = []
    assert max(tokenizer.vocab.values()) < vocab_size
    reverse_vocab = {id_: encoded_tok for encoded_tok, id_ in tokenizer.vocab.items()}
    added_vocab = tokenizer.get_added_vocab()
    added_tokens_decoder = tokenizer.added_tokens_decoder
    for i in range(vocab_size):
        if i not in reverse_vocab:
            tokens.append(f"[PAD{i}]")
            toktypes.append(gguf.TokenType.UNUSED)
        else:
            token: str = reverse_vocab[i]
            if token in added_vocab:
                if not added_tokens_decoder[i].normalized:
                    previous_token = token
                    token = tokenizer.decode(tokenizer.encode(token, add_special_tokens=False))
                    if previous_token != token:
                        print(f"note: {previous_token!r} re-encodes to {token!r}", file=sys.stderr)
                if added_tokens_decoder[i].special or does_token_look_special(token):
                    toktypes.append(gguf.TokenType.CONTROL)
                else:
                    token = token.replace(b"\xe2\x96\x81".decode("utf-8"), " ")
                    toktypes.append(gguf.TokenType.USER_DEFINED)
            else:
                toktypes.append(gguf.TokenType.NORMAL)
            tokens.append(token)
    return tokens, toktypes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=sorted(PROFILES))
    ap.add_argument("--tokenizer-dir", required=True, type=Path,
                    help="folder with tokenizer.json and tokenizer_config.json")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--llama-cpp-dir", type=Path, default=None,
                    help="llama.cpp source tree (e.g. <llama-cpp-python sdist>/vendor/llama.cpp): use its gguf-py "
                         "and its pre-tokenizer hash table")
    args = ap.parse_args()

    if args.llama_cpp_dir is not None:
        sys.path.insert(0, str(args.llama_cpp_dir / "gguf-py"))
    import gguf  # noqa: E402
    from transformers import AutoTokenizer  # noqa: E402

    prof = PROFILES[args.profile]
    print(f"gguf-py: {gguf.__file__}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(args.tokenizer_dir / f, d / f)
        # The converter reads vocab_size (and fallback bos/eos ids) from the model's config.json.
        (d / "config.json").write_text(json.dumps(prof["config_json"]), encoding="utf-8")

        tokenizer = AutoTokenizer.from_pretrained(str(d))
        vocab_size = prof["config_json"]["vocab_size"]

        # tokenizer.ggml.pre exactly as get_vocab_base_pre derives it.
        chktok = tokenizer.encode(CHKTXT)
        chkhsh = sha256(str(chktok).encode()).hexdigest()
        table = load_pre_hash_table(args.llama_cpp_dir)
        tokpre = table.get(chkhsh)
        print(f"chkhsh = {chkhsh} -> {tokpre}", file=sys.stderr)
        if tokpre != prof["pre"]:
            raise SystemExit(f"pre-tokenizer hash {chkhsh} maps to {tokpre!r}, expected {prof['pre']!r}")

        tokens, toktypes = get_vocab_base(tokenizer, vocab_size, gguf)

        arch = prof["arch"]
        w = gguf.GGUFWriter(str(args.out), arch)
        hp = prof["hparams"]
        # same key order as llama.cpp's own vocab files
        w.add_name(prof["name"])
        w.add_block_count(hp["block_count"])
        w.add_context_length(hp["context_length"])
        w.add_embedding_length(hp["embedding_length"])
        w.add_feed_forward_length(hp["feed_forward_length"])
        w.add_head_count(hp["head_count"])
        w.add_head_count_kv(hp["head_count_kv"])
        w.add_rope_freq_base(hp["rope_freq_base"])
        w.add_layer_norm_rms_eps(hp["rms_eps"])
        w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
        if hp["write_vocab_size"]:
            w.add_vocab_size(vocab_size)
        if hp["rope_dimension_count"]:
            w.add_rope_dimension_count(hp["rope_dimension_count"])

        # _set_vocab_gpt2
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(tokpre)
        w.add_token_list(tokens)
        w.add_token_types(toktypes)
        special_vocab = gguf.SpecialVocab(d, load_merges=True)
        special_vocab.add_to_gguf(w)

        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.close()

    n_ctrl = sum(1 for t in toktypes if t == gguf.TokenType.CONTROL)
    n_user = sum(1 for t in toktypes if t == gguf.TokenType.USER_DEFINED)
    n_unused = sum(1 for t in toktypes if t == gguf.TokenType.UNUSED)
    print(f"wrote {args.out}: {len(tokens)} tokens ({n_ctrl} control, {n_user} user-defined, "
          f"{n_unused} unused), {len(special_vocab.merges)} merges", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
