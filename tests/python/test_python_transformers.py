"""geniex.transformers: Hugging Face Transformers code runs with only the import changed.

The snippets of ../shared/spec/BINDINGS.md section 2.5 (Qwen2.5's README, SmolLM2's README,
Transformers' LFM2 page, the TextIteratorStreamer docstring) run as published except for the
import, with their model ids mapped to local GGUF files through GENIEX_MODEL_MAP; greedy output
is compared with the native API (and so with `geniex run`, see test_python_api.py), streamed
pieces with the returned text. Then the pieces they rely on, one by one."""
from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

import geniex
from geniex.transformers import (AutoModelForCausalLM, AutoTokenizer, BatchEncoding,
                                 GenerationConfig, Tensor, TextIteratorStreamer, TextStreamer)

REPO = Path(__file__).resolve().parents[2]
TINY_LFM2 = REPO / "tests/data/models/tiny-lfm2-q8_0.gguf"


def run_snippet(source: str, gemma_gguf: Path, monkeypatch) -> dict:
    """Runs a published snippet with `from transformers` replaced by `from geniex.transformers`
    (the only change) and every model id mapped to a local GGUF."""
    monkeypatch.setenv("GENIEX_MODEL_MAP", json.dumps({
        "Qwen/Qwen2.5-7B-Instruct": str(gemma_gguf),
        "HuggingFaceTB/SmolLM2-1.7B-Instruct": str(gemma_gguf),
        "LiquidAI/LFM2-1.2B": str(TINY_LFM2),
        "openai-community/gpt2": str(gemma_gguf),
    }))
    source = textwrap.dedent(source)
    assert "from transformers import" in source
    scope: dict = {"__name__": "snippet"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(source.replace("from transformers import", "from geniex.transformers import"),
                     "snippet", "exec"), scope)
    scope["__stdout__"] = out.getvalue()
    return scope


@pytest.fixture(scope="module")
def native(gemma_gguf):
    with geniex.load(gemma_gguf, n_ctx=4096) as m:
        yield m


QWEN = '''
from transformers import AutoModelForCausalLM, AutoTokenizer

model_name = "Qwen/Qwen2.5-7B-Instruct"

model = AutoModelForCausalLM.from_pretrained(
    model_name,
    torch_dtype="auto",
    device_map="auto"
)
tokenizer = AutoTokenizer.from_pretrained(model_name)

prompt = "Give me a short introduction to large language model."
messages = [
    {"role": "system", "content": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."},
    {"role": "user", "content": prompt}
]
text = tokenizer.apply_chat_template(
    messages,
    tokenize=False,
    add_generation_prompt=True
)
model_inputs = tokenizer([text], return_tensors="pt").to(model.device)

generated_ids = model.generate(
    **model_inputs,
    max_new_tokens=512
)
generated_ids = [
    output_ids[len(input_ids):] for input_ids, output_ids in zip(model_inputs.input_ids, generated_ids)
]

response = tokenizer.batch_decode(generated_ids, skip_special_tokens=True)[0]
'''


def test_snippet_qwen_readme(gemma_gguf, monkeypatch, native):
    s = run_snippet(QWEN, gemma_gguf, monkeypatch)
    text = s["text"]
    assert text == native.apply_chat_template(s["messages"], add_generation_prompt=True)
    assert isinstance(s["model_inputs"].input_ids, Tensor)
    # Greedy (do_sample defaults to False) equals the native API on the same ids.
    ref = native.generate(text, max_tokens=512, temperature=0, parse_special=True)
    assert s["model_inputs"].input_ids[0].tolist() == ref.prompt_tokens
    new_ids = s["generated_ids"][0].tolist()
    assert new_ids[:len(ref.tokens)] == ref.tokens
    assert s["response"] == ref.text.strip() or s["response"] == ref.text
    assert len(ref.text) > 20


SMOLLM2 = '''
from transformers import AutoModelForCausalLM, AutoTokenizer
checkpoint = "HuggingFaceTB/SmolLM2-1.7B-Instruct"

device = "cuda" # for GPU usage or "cpu" for CPU usage
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
# for multiple GPUs install accelerate and do `model = AutoModelForCausalLM.from_pretrained(checkpoint, device_map="auto")`
model = AutoModelForCausalLM.from_pretrained(checkpoint).to(device)

messages = [{"role": "user", "content": "What is the capital of France."}]
input_text=tokenizer.apply_chat_template(messages, tokenize=False)
print(input_text)
inputs = tokenizer.encode(input_text, return_tensors="pt").to(device)
outputs = model.generate(inputs, max_new_tokens=50, temperature=0.2, top_p=0.9, do_sample=True)
print(tokenizer.decode(outputs[0]))
'''


def test_snippet_smollm2_readme(gemma_gguf, monkeypatch, native):
    s = run_snippet(SMOLLM2, gemma_gguf, monkeypatch)
    inputs, outputs = s["inputs"], s["outputs"]
    assert inputs.shape[0] == 1 and outputs.shape[0] == 1
    # Sampling (no greedy comparison possible): prompt kept, at most 50 new tokens, and the
    # printed decode is the prompt's text (special tokens spelled out) plus the new text.
    assert outputs[0][:inputs.shape[1]].tolist() == inputs[0].tolist()
    assert 0 < outputs.shape[1] - inputs.shape[1] <= 50
    printed = s["__stdout__"]
    assert printed.startswith(s["input_text"])
    assert s["tokenizer"].decode(outputs[0]) in printed
    assert printed.count("<bos>") >= 2  # the template's BOS and encode()'s, as in Transformers


LFM2 = '''
from transformers import AutoModelForCausalLM, AutoTokenizer

# Load model and tokenizer
model_id = "LiquidAI/LFM2-1.2B"
model = AutoModelForCausalLM.from_pretrained(
    model_id,
    device_map="auto",
    torch_dtype="bfloat16",
)
tokenizer = AutoTokenizer.from_pretrained(model_id)

# Generate answer
prompt = "What is C. elegans?"
input_ids = tokenizer.apply_chat_template(
    [{"role": "user", "content": prompt}],
    add_generation_prompt=True,
    return_tensors="pt",
    tokenize=True,
)

output = model.generate(
    input_ids,
    do_sample=True,
    temperature=0.3,
    min_p=0.15,
    repetition_penalty=1.05,
    max_new_tokens=512,
)

print(tokenizer.decode(output[0], skip_special_tokens=False))
'''


def test_snippet_lfm2_docs(gemma_gguf, monkeypatch):
    with pytest.warns(UserWarning, match="torch_dtype"):
        s = run_snippet(LFM2, gemma_gguf, monkeypatch)
    input_ids, output = s["input_ids"], s["output"]
    # The 4.x/5.x bridge: a BatchEncoding that acts as the ids.
    assert isinstance(input_ids, BatchEncoding)
    assert input_ids.shape == (1, len(input_ids["input_ids"][0]))
    n = input_ids.shape[1]
    assert output[0][:n].tolist() == input_ids[0].tolist()
    assert 0 < output.shape[1] - n <= 512
    assert s["__stdout__"].rstrip("\n") == s["tokenizer"].decode(output[0])


STREAMER = '''
from transformers import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer
from threading import Thread

tok = AutoTokenizer.from_pretrained("openai-community/gpt2")
model = AutoModelForCausalLM.from_pretrained("openai-community/gpt2")
inputs = tok(["An increasing sequence: one,"], return_tensors="pt")
streamer = TextIteratorStreamer(tok)

# Run the generation in a separate thread, so that we can fetch the generated text in a non-blocking way.
generation_kwargs = dict(inputs, streamer=streamer, max_new_tokens=20)
thread = Thread(target=model.generate, kwargs=generation_kwargs)
thread.start()
generated_text = ""
for new_text in streamer:
    generated_text += new_text
generated_text
'''


def test_snippet_text_iterator_streamer(gemma_gguf, monkeypatch, native):
    s = run_snippet(STREAMER, gemma_gguf, monkeypatch)
    s["thread"].join(timeout=60)
    ref = native.generate("An increasing sequence: one,", max_tokens=20, temperature=0)
    # The prompt is echoed first (skip_prompt=False), then the greedy continuation's pieces.
    assert s["generated_text"] == "<bos>An increasing sequence: one," + ref.text
    assert len(ref.tokens) == 20


# ---- the pieces, one by one -------------------------------------------------------------------

@pytest.fixture(scope="module")
def tok(gemma_gguf):
    return AutoTokenizer.from_pretrained(gemma_gguf)


@pytest.fixture(scope="module")
def model(gemma_gguf):
    return AutoModelForCausalLM.from_pretrained(gemma_gguf, device_map="cpu", n_threads=2)


def test_tokenizer_call_encode_decode(tok, native):
    enc = tok("Hello <start_of_turn>world")
    assert isinstance(enc, BatchEncoding) and enc.keys() == {"input_ids", "attention_mask"}
    assert enc["input_ids"] == native.tokenize("Hello <start_of_turn>world", parse_special=True)
    assert enc.input_ids[0] == tok.bos_token_id == 2 and enc.attention_mask == [1] * len(
        enc.input_ids)
    assert tok.encode("Hello", add_special_tokens=False) == native.tokenize("Hello", False)
    assert tok.decode(enc["input_ids"]) == "<bos>Hello <start_of_turn>world"
    assert tok.decode(enc["input_ids"], skip_special_tokens=True) == "Hello world"
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<bos>", "<eos>", "<pad>")
    assert len(tok) == tok.vocab_size == native.info.n_vocab
    batch = tok(["a b c d", "hi"], padding=True, return_tensors="np")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids.shape == mask.shape and ids.shape[0] == 2
    assert mask[1].tolist()[0] == 0 and ids[1][0] == tok.pad_token_id  # left padding
    assert tok.batch_decode(ids, skip_special_tokens=True) == ["a b c d", "hi"]
    with pytest.raises(ValueError, match="padding"):
        tok(["a b c d", "hi"], return_tensors="np")


def test_apply_chat_template_forms(tok, native):
    msgs = [{"role": "user", "content": "Hi"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text == native.apply_chat_template(msgs, add_generation_prompt=True)
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True)
    assert isinstance(ids, BatchEncoding) and ids.tolist() == native.chat_tokens(msgs)
    assert list(ids) == ids.tolist() and len(ids) == len(ids.tolist()) and ids[0] == 2
    plain = tok.apply_chat_template(msgs, add_generation_prompt=True, return_dict=False)
    assert plain == ids.tolist()
    d = tok.apply_chat_template(msgs, add_generation_prompt=True, return_dict=True,
                                return_tensors="np")
    assert set(d.keys()) == {"input_ids", "attention_mask"} and d["input_ids"].shape[0] == 1
    both = tok.apply_chat_template([msgs, msgs + [{"role": "assistant", "content": "Yo"}]],
                                   tokenize=False)
    assert isinstance(both, list) and len(both) == 2
    with pytest.raises(TypeError, match="JSON-schema"):
        tok.apply_chat_template(msgs, tools=[len])  # transformers converts functions; we do not
    with pytest.raises(NotImplementedError):
        tok.apply_chat_template(msgs, chat_template="{{ messages }}")


def test_apply_chat_template_tools_documents_and_variables_as_transformers(monkeypatch):
    """tools=, documents= and template variables reach the template as transformers passes
    them: the tiny Qwen 3's template (Hermes tools, enable_thinking) rendered by Python jinja2
    in transformers' environment (tests/data/chat_templates/make_goldens.py) is the judge."""
    import datetime
    import json
    import sys

    import gguf
    from geniex.transformers import AutoTokenizer

    root = Path(__file__).resolve().parents[2]
    path = root / "tests/data/models/tiny-qwen3-f32.gguf"
    field = gguf.GGUFReader(path).fields["tokenizer.chat_template"]
    template = bytes(field.parts[field.data[0]]).decode()
    monkeypatch.syspath_prepend(str(root / "tests/data/chat_templates"))
    import make_goldens
    env = make_goldens.make_env(datetime.datetime.now())
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather — 天気",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}]
    conv = [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {
                 "name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2.5]}}}]},
            {"role": "tool", "content": "21 degrees", "name": "get_weather"}]
    tok = AutoTokenizer.from_pretrained(str(path))
    for kwargs in ({"tools": tools}, {"tools": tools, "enable_thinking": False},
                   {"documents": [{"title": "a", "text": "b"}]}):
        got = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True, **kwargs)
        ctx = {"messages": conv, "tools": None, "documents": None, "add_generation_prompt": True,
               "bos_token": "", "eos_token": "<|im_end|>", **kwargs}
        assert got == env.from_string(template).render(**ctx), kwargs
    # Arguments given as JSON text render like the dict (the template's tojson sees the dict).
    conv_text = json.loads(json.dumps(conv))
    conv_text[1]["tool_calls"][0]["function"]["arguments"] = json.dumps(
        conv[1]["tool_calls"][0]["function"]["arguments"])
    assert tok.apply_chat_template(conv_text, tokenize=False, tools=tools) == \
        tok.apply_chat_template(conv, tokenize=False, tools=tools)
    del sys.modules["make_goldens"]


def test_generate_greedy_forms_and_batches(tok, model, native):
    ref = native.generate("The capital of France is", max_tokens=10, temperature=0)
    ids = tok("The capital of France is", return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=10)
    assert isinstance(out, Tensor) and out.shape == (1, ids.shape[1] + 10)
    assert out[0].tolist() == ref.prompt_tokens + ref.tokens
    # numpy in, numpy out; max_length counts the prompt (Transformers' default 20).
    np_out = model.generate(tok("The capital of France is", return_tensors="np").input_ids)
    assert type(np_out) is np.ndarray and np_out.shape[1] == 20
    assert np_out[0][:ids.shape[1] + 10].tolist() == out[0].tolist()
    # A GenerationConfig object, and a left-padded batch: rows equal their solo runs.
    other = native.generate("Paris is", max_tokens=10, temperature=0)
    batch = tok(["The capital of France is", "Paris is"], padding=True, return_tensors="pt")
    gen = model.generate(**batch, generation_config=GenerationConfig(max_new_tokens=10))
    pad = batch.input_ids.shape[1]
    assert gen[0][pad:].tolist()[:10] == ref.tokens
    assert gen[1][pad:pad + len(other.tokens)].tolist() == other.tokens
    assert gen[1][:pad].tolist() == batch.input_ids[1].tolist()
    # __call__: logits (batch, n, vocab) with the greedy argmax.
    logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], tok.vocab_size)
    assert int(np.argmax(logits[0, -1])) == ref.tokens[0]
    with pytest.raises(NotImplementedError, match="num_beams"):
        model.generate(ids, num_beams=4)


def test_text_streamer_prints_prompt_and_pieces(tok, model, native):
    ids = tok("Once upon a time", return_tensors="pt").input_ids
    ref = native.generate("Once upon a time", max_tokens=12, temperature=0)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = model.generate(ids, streamer=TextStreamer(tok, skip_prompt=True), max_new_tokens=12)
    assert buf.getvalue() == ref.text + "\n"
    assert out[0][ids.shape[1]:].tolist() == ref.tokens
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        model.generate(ids, streamer=TextStreamer(tok, skip_special_tokens=True),
                       max_new_tokens=12)
    assert buf.getvalue() == "Once upon a time" + ref.text + "\n"


def test_iterator_streamer_cancel(tok, model):
    import threading

    ids = tok("Count: 1, 2, 3,", return_tensors="pt").input_ids
    streamer = TextIteratorStreamer(tok, skip_prompt=True, timeout=60)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "out", model.generate(ids, streamer=streamer, max_new_tokens=2000,
                              eos_token_id=[])))
    t.start()
    pieces = []
    for piece in streamer:
        pieces.append(piece)
        if len(pieces) == 3:
            streamer.cancel()
    t.join(timeout=60)
    new = result["out"].shape[1] - ids.shape[1]
    assert 3 <= new < 100


def test_model_resolution(gemma_gguf, tmp_path, monkeypatch):
    monkeypatch.setenv("GENIEX_MODEL_MAP", json.dumps({"org/name": str(gemma_gguf)}))
    assert AutoTokenizer.from_pretrained("org/name").bos_token == "<bos>"
    (tmp_path / "model.gguf").symlink_to(gemma_gguf)
    assert AutoTokenizer.from_pretrained(tmp_path).eos_token == "<eos>"
    with pytest.raises(OSError, match="never downloads"):
        AutoTokenizer.from_pretrained("org/unknown-model")


def test_auto_tokenizer_equals_hugging_face_on_the_gemma_corpus(tok):
    # tests/data/tokenizer/gemma3_corpus_goldens.json: transformers' own tokenizer for this GGUF
    # (`hf`: tokenizer(text, add_special_tokens=False)) and llama.cpp's, on 2,289 texts. Ours must
    # equal transformers everywhere except the cases where transformers and llama.cpp disagree
    # (documented in the file's notes), where it follows llama.cpp, as the engine does.
    goldens = json.loads((REPO / "tests/data/tokenizer/gemma3_corpus_goldens.json").read_text())
    cases = goldens["cases"]
    assert len(cases) == 2289
    differ, judges_differ = [], []
    for i, case in enumerate(cases):
        ids = tok(case["text"], add_special_tokens=False)["input_ids"]
        if case["hf"] != case["llama_cpp_special"]:
            judges_differ.append(i)
            assert ids == case["llama_cpp_special"], case["text"]
        elif ids != case["hf"]:
            differ.append(i)
        if case["roundtrip_special"]:
            assert tok.decode(ids) == case["text"]
    assert differ == []
    assert len(judges_differ) == 2289 - goldens["stats"]["hf_eq_llama_cpp_special"] == 2


def test_eos_token_id_none_generates_to_max_new_tokens():
    # generate(eos_token_id=None) stops only at max_new_tokens, as in Transformers: the engine
    # is asked to go on past end-of-generation tokens; otherwise it stops at them.
    model = AutoModelForCausalLM.from_pretrained(TINY_LFM2, device_map="cpu", n_ctx=256)
    seen = []

    class Spy:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def generate(self, prompt, config, **kw):
            seen.append(config.ignore_eos)
            return self._inner.generate(prompt, config, **kw)

    native = model.native
    model._model = Spy(native)
    try:
        ids = [native.tokenize("Hello")]
        out = model.generate(ids, max_new_tokens=6, eos_token_id=None)
        assert len(out[0]) == len(ids[0]) + 6
        model.generate(ids, max_new_tokens=2)
        model.generate(ids, max_new_tokens=2, eos_token_id=model.generation_config.eos_token_id)
        assert seen == [True, False, False]
    finally:
        native.close()
