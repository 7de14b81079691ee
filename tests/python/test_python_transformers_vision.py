"""geniex.transformers with images: AutoProcessor + AutoModelForImageTextToText /
AutoModelForVision2Seq on the tiny random-weight LFM2-VL (tests/data/models, its mmproj found
beside it).

Snippet 5 of ../shared/spec/BINDINGS.md section 2.5 (Transformers' docs/source/en/model_doc/
lfm2_vl.md) runs as published with only the import changed and the image URL swapped for a local
file (no network); its greedy tokens equal the native API's chat() and `geniex run --image` on
the same image and question, and the engine's context after it holds the same image embeddings
(the image pseudo-tokens are the image's content hash) as the native chat's prompt."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import geniex
from geniex.transformers import (AutoModelForCausalLM, AutoModelForImageTextToText,
                                 AutoModelForVision2Seq, AutoProcessor, BatchFeature,
                                 GenieXForImageTextToText, ImageInputs, find_mmproj)

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests/data/models"
VL = MODELS / "tiny-lfm2vl-f32.gguf"
MMPROJ = MODELS / "mmproj-tiny-lfm2vl-f32.gguf"
CAT = REPO / "tests/data/vision/chelsea.png"
COFFEE = REPO / "tests/data/vision/coffee.png"
QUESTION = "What is in this image?"

# Transformers' docs/source/en/model_doc/lfm2_vl.md, as published (the stray backslash line
# included); the test swaps only the import and the image URL.
LFM2_VL = r'''
from transformers import AutoProcessor, AutoModelForImageTextToText
\
# Load model and processor
model_id = "LiquidAI/LFM2-VL-1.6B"
model = AutoModelForImageTextToText.from_pretrained(
    model_id,
    device_map="auto",
    dtype="bfloat16",
)
processor = AutoProcessor.from_pretrained(model_id)

# Load image and create conversation
conversation = [
    {
        "role": "user",
        "content": [
            {"type": "image", "image": "https://www.ilankelman.org/stopsigns/australia.jpg"},
            {"type": "text", "text": "What is in this image?"},
        ],
    },
]

# Generate snswer
inputs = processor.apply_chat_template(
    conversation,
    add_generation_prompt=True,
    return_tensors="pt",
    return_dict=True,
    tokenize=True,
).to(model.device)

outputs = model.generate(**inputs, max_new_tokens=64)
processor.batch_decode(outputs, skip_special_tokens=True)[0]
'''
URL = "https://www.ilankelman.org/stopsigns/australia.jpg"


def chat_msgs(image: Path, text: str = QUESTION) -> list:
    return [{"role": "user", "content": [{"type": "image", "path": str(image)},
                                         {"type": "text", "text": text}]}]


@pytest.fixture(scope="module")
def native():
    m = geniex.load(VL, device="cpu", n_ctx=4096, mmproj=MMPROJ)
    yield m
    m.close()


@pytest.fixture(scope="module")
def vl_model():
    m = AutoModelForImageTextToText.from_pretrained(VL, device_map="cpu")
    yield m
    m.native.close()


@pytest.fixture(scope="module")
def processor():
    return AutoProcessor.from_pretrained(VL)


def test_lfm2_vl_snippet_runs_with_only_the_import_changed(native, geniex_bin, monkeypatch):
    monkeypatch.setenv("GENIEX_MODEL_MAP", json.dumps({"LiquidAI/LFM2-VL-1.6B": str(VL)}))
    source = textwrap.dedent(LFM2_VL)
    assert source.count("from transformers import") == 1 and source.count(URL) == 1
    source = (source.replace("from transformers import", "from geniex.transformers import")
              .replace(URL, str(CAT)))
    scope: dict = {"__name__": "snippet"}
    with contextlib.redirect_stdout(io.StringIO()), pytest.warns(UserWarning, match="dtype"):
        exec(compile(source, "lfm2_vl.md", "exec"), scope)
    inputs, outputs = scope["inputs"], scope["outputs"]
    model, processor = scope["model"], scope["processor"]
    assert isinstance(model, GenieXForImageTextToText)
    assert isinstance(inputs, BatchFeature) and isinstance(inputs["pixel_values"], ImageInputs)
    ids = inputs["input_ids"]
    assert ids.shape[0] == 1 and ids.tolist()[0] == native.chat_tokens(chat_msgs(CAT))
    # HF's return value: the prompt's ids, then the new ones.
    assert outputs.shape[0] == 1 and outputs[0][: ids.shape[1]].tolist() == ids[0].tolist()
    new = outputs[0][ids.shape[1]:].tolist()

    cached = model.native.cached_tokens()
    want = native.chat(chat_msgs(CAT), max_tokens=64, temperature=0)
    assert new == want.tokens
    # The same image went in: both contexts hold the same prompt, image embeddings included (as
    # the image's content-hash pseudo-tokens).
    n = len(want.prompt_tokens)
    assert cached[:n] == native.cached_tokens()[:n]
    assert len(want.prompt_tokens) > ids.shape[1] + 16  # the image expanded to its embeddings
    text = processor.batch_decode(outputs, skip_special_tokens=True)[0]
    assert text == processor.tokenizer.decode(outputs[0], skip_special_tokens=True)
    assert text.endswith(want.text)

    r = subprocess.run([str(geniex_bin), "run", "-m", str(VL), "--mmproj", str(MMPROJ), "--json",
                        "--temp", "0", "-n", "64", "-c", "4096", "--image", str(CAT), "-p",
                        QUESTION], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert new == json.loads(r.stdout)["token_ids"]


def test_another_image_gives_another_context(vl_model, processor, native):
    inputs = processor.apply_chat_template(chat_msgs(COFFEE), add_generation_prompt=True,
                                           tokenize=True, return_dict=True, return_tensors="np")
    out = vl_model.generate(**inputs, max_new_tokens=4)
    assert isinstance(out, np.ndarray)
    cached = vl_model.native.cached_tokens()
    want = native.chat(chat_msgs(COFFEE), max_tokens=4, temperature=0)
    assert out[0][inputs["input_ids"].shape[1]:].tolist() == want.tokens
    assert cached[: len(want.prompt_tokens)] == native.cached_tokens()[: len(want.prompt_tokens)]
    cat = native.chat(chat_msgs(CAT), max_tokens=1, temperature=0)
    assert cached[: len(cat.prompt_tokens)] != native.cached_tokens()[: len(cat.prompt_tokens)]


def test_vision2seq_processor_call_with_images_bytes_and_a_batch(processor, native):
    model = AutoModelForVision2Seq.from_pretrained(VL, device_map="cpu", n_ctx=4096)
    try:
        # The 4.x pattern: the template with an image slot, then processor(text=, images=).
        conv = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
        prompt = processor.apply_chat_template(conv, add_generation_prompt=True)
        assert isinstance(prompt, str) and prompt.count(processor.image_token) == 1
        inputs = processor(text=prompt, images=[CAT.read_bytes()], return_tensors="pt")
        out = model.generate(**inputs, max_new_tokens=5)
        want = native.chat(chat_msgs(CAT), max_tokens=5, temperature=0)
        assert out[0][inputs["input_ids"].shape[1]:].tolist() == want.tokens

        # Two conversations with different images, left-padded: each row equals its solo run.
        convs = [chat_msgs(CAT), chat_msgs(COFFEE, "Describe it.")]
        batch = processor.apply_chat_template(convs, add_generation_prompt=True, tokenize=True,
                                              return_dict=True, padding=True, return_tensors="np")
        assert batch["pixel_values"].rows == [[str(CAT)], [str(COFFEE)]]
        out = model.generate(**batch, max_new_tokens=3)
        width = batch["input_ids"].shape[1]
        for row, conv in enumerate(convs):
            solo = native.chat(conv, max_tokens=3, temperature=0)
            assert out[row][width:width + len(solo.tokens)].tolist() == solo.tokens
        assert processor.decode(out[0], skip_special_tokens=True) == processor.batch_decode(
            out, skip_special_tokens=True)[0]
    finally:
        model.native.close()


def test_edited_ids_are_spelled_out_for_the_engine(vl_model, processor, native):
    # Ids that no longer match the processor's text (here: a shorter question) still reach the
    # engine, as their token text, with the images.
    inputs = processor.apply_chat_template(chat_msgs(CAT), add_generation_prompt=True,
                                           tokenize=True, return_dict=True)
    other = processor.apply_chat_template(chat_msgs(CAT, "What?"), add_generation_prompt=True,
                                          tokenize=True, return_dict=True)
    inputs["input_ids"] = other["input_ids"]
    out = vl_model.generate(**inputs, max_new_tokens=3)
    assert isinstance(out, list)
    want = native.chat(chat_msgs(CAT, "What?"), max_tokens=3, temperature=0)
    assert out[0][len(other["input_ids"]):] == want.tokens


def test_mmproj_is_found_beside_the_model_or_mapped(tmp_path, monkeypatch):
    assert find_mmproj(VL, VL) == MMPROJ
    for name in ("lfm2-vl-450m-q4_0.gguf", "mmproj-lfm2-vl-450m-f16.gguf", "lfm2-350m-q8_0.gguf",
                 "mmproj-other-f16.gguf"):
        (tmp_path / name).write_bytes(b"")
    assert find_mmproj("x", tmp_path / "lfm2-vl-450m-q4_0.gguf") == \
        tmp_path / "mmproj-lfm2-vl-450m-f16.gguf"
    assert find_mmproj("x", tmp_path / "lfm2-350m-q8_0.gguf") is None
    monkeypatch.setenv("GENIEX_MODEL_MAP", json.dumps(
        {"org/vl": {"model": str(tmp_path / "lfm2-350m-q8_0.gguf"),
                    "mmproj": str(tmp_path / "mmproj-other-f16.gguf")}}))
    assert find_mmproj("org/vl", tmp_path / "lfm2-350m-q8_0.gguf") == \
        tmp_path / "mmproj-other-f16.gguf"
    monkeypatch.setenv("GENIEX_MODEL_MAP", json.dumps({"org/bad": {"mmproj": "x"}}))
    with pytest.raises(ValueError, match="needs 'model'"):
        find_mmproj("org/bad", tmp_path / "lfm2-350m-q8_0.gguf")
    with pytest.raises(OSError, match="does not exist"):
        find_mmproj("x", VL, tmp_path / "missing.gguf")


def test_bad_image_inputs_raise_clear_errors(vl_model, processor):
    with pytest.raises(OSError, match="never downloads"):
        processor.apply_chat_template(
            [{"role": "user", "content": [{"type": "image", "image": URL}]}], tokenize=True)
    with pytest.raises(TypeError, match="PIL image"):
        processor(text="<image>x", images=[object()])
    ids = processor("<image>x")["input_ids"]
    with pytest.raises(TypeError, match="AutoProcessor"):
        vl_model.generate(input_ids=[ids], pixel_values=np.zeros((1, 3, 8, 8), np.float32))
    inputs = processor(text="<image>x", images=[b"not an image"])
    with pytest.raises(geniex.InvalidArgument, match="image"):
        vl_model.generate(**inputs, max_new_tokens=2)
    # A text-only load of the same file refuses images with a clear message.
    text_only = AutoModelForCausalLM.from_pretrained(VL, device_map="cpu", n_ctx=512)
    try:
        with pytest.raises(ValueError, match="mmproj"):
            text_only.generate(**processor(text="<image>x", images=[CAT]), max_new_tokens=2)
    finally:
        text_only.native.close()
    # The model stays usable.
    ok = vl_model.generate(**processor(text="<image>x", images=[CAT]), max_new_tokens=2)
    assert len(ok[0]) > len(ids)
