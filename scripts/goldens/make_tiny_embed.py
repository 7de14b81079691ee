#!/usr/bin/env python3
"""Embedding goldens: a tiny random-weight BERT (sentence-transformers, mean pooling) converted with
llama.cpp's converter, and transformers' hidden states of the committed tiny decoders.

Goldens tooling only (not used by the build, the tests or CI).  Writes tests/data/embed/:

  tiny-bert/                       the sentence-transformers checkpoint (BertModel + Pooling mean)
  tiny-bert-f32.gguf               llama.cpp's convert_hf_to_gguf.py (via convert_tiny_gguf.py,
                                   pre-tokenizer "bert-bge": the tiny vocab's hash is unknown)
  embed_goldens.json               per model: texts, the token ids transformers' tokenizer gives,
                                   and the pooled final hidden states (mean, cls, last; not
                                   normalised): sentence-transformers' encode() for the BERT mean
                                   pooling, transformers' last_hidden_state (after the final norm)
                                   for the decoders tests/data/hf/{llama,qwen3,gemma3} (the sources
                                   of tests/data/models/tiny-{llama,qwen3,gemma3}-f32.gguf), and
                                   sentence-transformers' encode() (dense projections and
                                   Normalize included: "mean" is its output) for
  tiny-gemma-embedding/            EmbeddingGemma's form (make_gemma_embedding), converted with
  tiny-gemma-embedding-f32.gguf    --sentence-transformers-dense-modules (gemma-embedding)

  ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_tiny_embed.py
(needs `pip install sentence-transformers` in that venv.)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = REPO / "tests/data/embed"
HF = REPO / "tests/data/hf"
LLAMA_DIR = Path.home() / ".cache/geniex-goldens/llama_cpp_python-0.3.36/vendor/llama.cpp"
SEED = 4321

TEXTS = [
    "the cat sat on the mat",
    "a dog runs in the park",
    "the quick brown fox jumps over the lazy dog",
    "rain falls on the green hills",
    "hello world",
    "Numbers: 42 and 7!",
    "the cat and the dog play",
    "x",
]

WORDS = ("the a an and or on in over under of to is are was sat runs run jumps jump play plays cat "
         "cats dog dogs fox quick brown lazy mat park rain falls fall green hills hill hello world "
         "numbers number sun moon red blue big small house tree water fire sky sea car road book "
         "read write city river boat bird fish").split()


def bert_vocab() -> list[str]:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(".,!?:;'\"-()")
    sub = ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + ["##s", "##ing", "##ed", "##er"]
    vocab: list[str] = []
    for t in specials + chars + WORDS + sub:
        if t not in vocab:
            vocab.append(t)
    return vocab


def make_bert(mdir: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(SEED)
    mdir.mkdir(parents=True, exist_ok=True)
    raw = Path(tempfile.mkdtemp(prefix="tiny-bert-"))
    vocab = {t: i for i, t in enumerate(bert_vocab())}
    tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    assert tok("the cat")["input_ids"] == [2, vocab["the"], vocab["cat"], 3], "vocab not taken"
    cfg = BertConfig(vocab_size=len(bert_vocab()), hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=128, max_position_embeddings=128,
                     type_vocab_size=2, initializer_range=0.2, layer_norm_eps=1e-12,
                     hidden_act="gelu")
    model = BertModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters
        for name, p in model.named_parameters():
            if "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(raw, safe_serialization=True)
    tok.save_pretrained(raw)
    word = models.Transformer(str(raw), max_seq_length=128)
    pool = models.Pooling(word.get_embedding_dimension(), pooling_mode="mean")
    st = SentenceTransformer(modules=[word, pool], device="cpu")
    st.save(str(mdir))


def make_gemma_embedding(mdir: Path) -> None:
    """EmbeddingGemma's form: Gemma3TextModel with bidirectional attention (the tiny gemma3's
    config and tokenizer, fresh random weights), mean pooling, Dense 64->128 and 128->64 (no bias,
    identity activation), Normalize, as google/embeddinggemma-300m's modules are laid out."""
    import shutil

    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import Gemma3TextConfig, Gemma3TextModel

    torch.manual_seed(SEED + 1)
    raw = Path(tempfile.mkdtemp(prefix="tiny-gemma-embedding-"))
    cfg = json.loads((HF / "gemma3" / "config.json").read_text(encoding="utf-8"))
    cfg.update({"architectures": ["Gemma3TextModel"], "use_bidirectional_attention": True,
                "sliding_window": 128, "initializer_range": 0.2})
    config = Gemma3TextConfig(**{k: v for k, v in cfg.items() if k != "transformers_version"})
    model = Gemma3TextModel(config).eval()
    with torch.no_grad():  # non-trivial norms
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(raw, safe_serialization=True)
    for f in ("tokenizer.model", "tokenizer_config.json"):
        shutil.copy(HF / "gemma3" / f, raw / f)
    word = models.Transformer(str(raw), max_seq_length=128)
    pool = models.Pooling(word.get_embedding_dimension(), pooling_mode="mean")
    d2 = models.Dense(64, 128, bias=False, activation_function=torch.nn.Identity())
    d3 = models.Dense(128, 64, bias=False, activation_function=torch.nn.Identity())
    with torch.no_grad():
        d2.linear.weight.normal_(0, 0.2)
        d3.linear.weight.normal_(0, 0.2)
    st = SentenceTransformer(modules=[word, pool, d2, d3, models.Normalize()], device="cpu")
    st.save(str(mdir))
    # The converter takes Gemma's SentencePiece model when the folder has one (as the real
    # EmbeddingGemma's does).
    shutil.copy(HF / "gemma3" / "tokenizer.model", mdir / "tokenizer.model")
    tc = json.loads((mdir / "tokenizer_config.json").read_text(encoding="utf-8"))
    tc.pop("vocab_file", None)  # the temporary folder's path
    (mdir / "tokenizer_config.json").write_text(json.dumps(tc, indent=2) + "\n", encoding="utf-8")


def gemma_embedding_goldens(mdir: Path) -> dict:
    from sentence_transformers import SentenceTransformer

    import sentencepiece as spm
    import torch

    st = SentenceTransformer(str(mdir), device="cpu").eval()
    # The ids of the SentencePiece model the GGUF carries (tests/data/hf/gemma3's, as the tiny
    # gemma3's), by sentencepiece itself, after BOS (2): transformers 5 turns this truncated
    # model into a fast tokenizer that splits into single characters (llama.cpp's tokenizer
    # gives sentencepiece's ids).
    sp = spm.SentencePieceProcessor(model_file=str(HF / "gemma3" / "tokenizer.model"))
    ids = [[2] + sp.encode(t) for t in TEXTS]
    out = []
    for row in ids:
        feats = {"input_ids": torch.tensor([row]), "attention_mask": torch.ones(1, len(row), dtype=torch.long)}
        with torch.no_grad():
            out.append([float(x) for x in st(feats)["sentence_embedding"][0]])
    return {"gguf": "tiny-gemma-embedding-f32.gguf",
            "source": "sentence-transformers (Gemma3TextModel bidirectional + mean Pooling + 2 Dense + Normalize)",
            "texts": TEXTS, "ids": ids, "mean": out}


def convert(mdir: Path, out: Path, pre: str | None, extra: tuple[str, ...] = ()) -> None:
    cmd = [sys.executable, str(HERE / "convert_tiny_gguf.py"), "--llama-cpp-dir", str(LLAMA_DIR)]
    if pre:
        cmd += ["--tokenizer-pre", pre]
    cmd += ["--", str(mdir), "--outtype", "f32", "--outfile", str(out), *extra]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not out.exists():
        sys.stderr.write(res.stdout[-4000:] + res.stderr[-8000:])
        raise SystemExit(f"conversion failed: {out}")


def pooled(hidden, n: int) -> dict:
    h = hidden[0, :n].double()
    return {"mean": h.mean(0).tolist(), "cls": h[0].tolist(), "last": h[n - 1].tolist()}


def bert_goldens(mdir: Path) -> dict:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    st = SentenceTransformer(str(mdir), device="cpu")
    st_mean = st.encode(TEXTS, normalize_embeddings=False, convert_to_numpy=True, batch_size=3)
    tok = AutoTokenizer.from_pretrained(str(mdir))
    model = AutoModel.from_pretrained(str(mdir)).eval()
    out = {"gguf": "tiny-bert-f32.gguf", "source": "sentence-transformers (BertModel + mean Pooling)",
           "texts": TEXTS, "ids": [], "mean": [], "cls": [], "last": []}
    for i, t in enumerate(TEXTS):
        ids = tok(t)["input_ids"]
        with torch.no_grad():
            h = model(torch.tensor([ids])).last_hidden_state
        p = pooled(h, len(ids))
        out["ids"].append(ids)
        out["mean"].append([float(x) for x in st_mean[i]])
        out["cls"].append(p["cls"])
        out["last"].append(p["last"])
    return out


def decoder_goldens(arch: str) -> dict:
    import torch
    from transformers import AutoModel, AutoTokenizer

    d = HF / arch
    if arch == "gemma3":  # sentencepiece's ids after BOS (see gemma_embedding_goldens)
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=str(d / "tokenizer.model"))
        tokenize = lambda t: [2] + sp.encode(t)  # noqa: E731
    else:
        tok = AutoTokenizer.from_pretrained(str(d))
        tokenize = lambda t: tok(t)["input_ids"]  # noqa: E731
    model = AutoModel.from_pretrained(str(d), dtype=torch.float32).eval()
    out = {"gguf": f"../models/tiny-{arch}-f32.gguf", "source": f"transformers AutoModel({d.relative_to(REPO)})",
           "texts": TEXTS, "ids": [], "mean": [], "cls": [], "last": []}
    for t in TEXTS:
        ids = tokenize(t)
        with torch.no_grad():
            h = model(torch.tensor([ids])).last_hidden_state
        p = pooled(h, len(ids))
        out["ids"].append(ids)
        for k in ("mean", "cls", "last"):
            out[k].append(p[k])
    return out


def main() -> None:
    import torch
    import transformers
    torch.set_num_threads(2)
    OUT.mkdir(parents=True, exist_ok=True)
    mdir = OUT / "tiny-bert"
    make_bert(mdir)
    convert(mdir, OUT / "tiny-bert-f32.gguf", "bert-bge")
    gdir = OUT / "tiny-gemma-embedding"
    make_gemma_embedding(gdir)
    convert(gdir, OUT / "tiny-gemma-embedding-f32.gguf", None,
            ("--sentence-transformers-dense-modules",))
    goldens = {
        "generator": "scripts/goldens/make_tiny_embed.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "sentence_transformers": __import__("sentence_transformers").__version__},
        "models": {"bert": bert_goldens(mdir), "llama": decoder_goldens("llama"),
                   "qwen3": decoder_goldens("qwen3"), "gemma3": decoder_goldens("gemma3"),
                   "gemma-embedding": gemma_embedding_goldens(gdir)},
    }
    (OUT / "embed_goldens.json").write_text(json.dumps(goldens, indent=1), encoding="utf-8")
    print("wrote", OUT / "embed_goldens.json")


if __name__ == "__main__":
    main()
