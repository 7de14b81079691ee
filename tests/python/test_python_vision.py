"""Images through the Python package (issue 32 with issue 30's LFM2-VL): the tiny random-weight
LFM2-VL with its mmproj, built by geniex.ModelBuilder(...).with_mmproj(...); generate(images=)
(path and bytes) and chat image parts give the same tokens as `geniex run` on the same inputs,
and bad images raise InvalidArgument with the engine's message, the model staying usable."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import geniex

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests/data/models"
VL = MODELS / "tiny-lfm2vl-f32.gguf"
MMPROJ = MODELS / "mmproj-tiny-lfm2vl-f32.gguf"
CAT = REPO / "tests/data/vision/chelsea.png"
COFFEE = REPO / "tests/data/vision/coffee.png"


@pytest.fixture(scope="module")
def vl():
    m = (geniex.ModelBuilder(str(VL)).with_mmproj(MMPROJ).with_device(geniex.Device.cpu())
         .with_threads(2).with_context_size(1024).build())
    yield m
    m.close()


def cli(geniex_bin, *args):
    r = subprocess.run([str(geniex_bin), "run", "-m", str(VL), "--mmproj", str(MMPROJ), "--json",
                        "--temp", "0", "-n", "6", "-t", "2", "-c", "1024", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_raw_generate_with_images_equals_geniex_run(vl, geniex_bin):
    want = cli(geniex_bin, "--raw", "--image", CAT, "--image", COFFEE, "-p", "<image> vs <image>:")
    by_path = vl.generate("<image> vs <image>:", images=[CAT, str(COFFEE)], max_tokens=6,
                          temperature=0)
    assert by_path.tokens == want["token_ids"]
    assert by_path.prompt_tokens == want["prompt_token_ids"]
    by_bytes = vl.generate("<image> vs <image>:", images=[CAT.read_bytes(), COFFEE.read_bytes()],
                           max_tokens=6, temperature=0)
    assert by_bytes.tokens == by_path.tokens


def test_chat_image_parts_equal_geniex_run(vl, geniex_bin):
    want = cli(geniex_bin, "--image", CAT, "-p", "What is this?")
    msgs = [{"role": "user", "content": [{"type": "image", "path": str(CAT)},
                                         {"type": "text", "text": "What is this?"}]}]
    got = vl.chat(msgs, max_tokens=6, temperature=0)
    assert got.tokens == want["token_ids"]


def test_bad_images_raise_and_the_model_stays_usable(vl):
    with pytest.raises(geniex.InvalidArgument, match="image"):
        vl.generate("<image>x", images=[b"not an image at all"], max_tokens=2)
    with pytest.raises(geniex.GenieXError):
        vl.generate("<image>x", images=[REPO / "no/such/file.png"], max_tokens=2)
    ok = vl.generate("<image>x", images=[CAT], max_tokens=2, temperature=0)
    assert len(ok.tokens) == 2
