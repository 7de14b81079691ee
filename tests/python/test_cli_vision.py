"""Images through the CLI (issue 30): `geniex run --image`, --mmproj and its discovery,
`/image` in `geniex chat`, `geniex bench --image`, on the tiny random-weight LFM2-VL."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests/data/models"
VL = MODELS / "tiny-lfm2vl-f32.gguf"
MMPROJ = MODELS / "mmproj-tiny-lfm2vl-f32.gguf"
TEXT = MODELS / "tiny-qwen2-q8_0.gguf"
CAT = REPO / "tests/data/vision/chelsea.png"
COFFEE = REPO / "tests/data/vision/coffee.png"

FAST = ["--temp", "0", "-n", "4", "-t", "2", "-c", "1024"]


def run(geniex_bin, *args, input_text=None, timeout=120):
    return subprocess.run([str(geniex_bin), *map(str, args)], capture_output=True, text=True,
                          input=input_text, timeout=timeout)


def replies(stderr: str) -> int:
    """Replies of a `geniex chat -v` session: -v prints the seed after each one."""
    return sum(1 for ln in stderr.splitlines() if ln.startswith("geniex: seed "))


def one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("geniex")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture()
def vl_dir(tmp_path):
    """The tiny VL model as model.gguf with mmproj-model.gguf beside it (discovery)."""
    shutil.copy(VL, tmp_path / "model.gguf")
    shutil.copy(MMPROJ, tmp_path / "mmproj-model.gguf")
    return tmp_path


def test_run_with_an_image(geniex_bin):
    r = run(geniex_bin, "run", "-m", VL, "--mmproj", MMPROJ, "--image", CAT, "-p",
            "What is this?", "--json", *FAST)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["generated_tokens"] == 4
    # The image's tokens are in the prompt: far more than the few text tokens.
    assert out["prompt_tokens"] > 30
    text = run(geniex_bin, "run", "-m", VL, "--mmproj", MMPROJ, "--image", CAT, "-p",
               "What is this?", *FAST)
    assert text.returncode == 0, text.stderr
    assert text.stdout.strip() != "" or text.stdout == out["text"] + "\n"
    assert "TTFT" in text.stderr


def test_run_markers_raw_and_two_images(geniex_bin):
    args = ["run", "-m", VL, "--mmproj", MMPROJ, "--json", *FAST]
    chat = run(geniex_bin, *args, "--image", CAT, "--image", COFFEE, "-p", "A <image> and <image>?")
    assert chat.returncode == 0, chat.stderr
    raw = run(geniex_bin, *args, "--raw", "--image", CAT, "-p", "<image>Describe:")
    assert raw.returncode == 0, raw.stderr
    one = run(geniex_bin, *args, "--image", CAT, "-p", "A <image> and <image>?")
    assert one.returncode == 2
    assert "marker" in one_error_line(one.stderr)


def test_discovery_beside_the_model(geniex_bin, vl_dir):
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--image", CAT, "-p", "Hi", *FAST)
    assert r.returncode == 0, r.stderr
    assert "using mmproj" in r.stderr and "mmproj-model.gguf" in r.stderr


def test_no_mmproj_then_image_is_a_clear_error(geniex_bin, vl_dir):
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--no-mmproj", "--image", CAT, "-p",
            "Hi", *FAST)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "takes no images" in line and "--mmproj" in line
    assert "using mmproj" not in r.stderr
    # Without an image, --no-mmproj just runs the text model.
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--no-mmproj", "-p", "Hi", *FAST)
    assert r.returncode == 0, r.stderr
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--no-mmproj", "--mmproj", MMPROJ,
            "-p", "Hi", *FAST)
    assert r.returncode == 2 and "contradict" in r.stderr


def test_several_mmproj_files(geniex_bin, vl_dir):
    # mmproj-<model file name> wins over other projectors that fit.
    shutil.copy(MMPROJ, vl_dir / "mmproj-other.gguf")
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--image", CAT, "-p", "Hi", *FAST)
    assert r.returncode == 0, r.stderr
    assert "using mmproj" in r.stderr and "mmproj-model.gguf" in r.stderr
    # Two that fit and neither named for the model: a note, and none is used.
    (vl_dir / "mmproj-model.gguf").rename(vl_dir / "mmproj-b.gguf")
    r = run(geniex_bin, "run", "-m", vl_dir / "model.gguf", "--image", CAT, "-p", "Hi", *FAST)
    assert r.returncode == 1
    assert "several mmproj files" in r.stderr and "takes no images" in r.stderr


def test_text_models_beside_an_mmproj_ignore_it(geniex_bin, tmp_path):
    # A text model (no <image> token, or another width) in the folder of a VL model's mmproj
    # loads as before, silently.
    for model in (TEXT, MODELS / "tiny-lfm2-f32.gguf"):
        shutil.copy(model, tmp_path / model.name)
    shutil.copy(MMPROJ, tmp_path / MMPROJ.name)
    for model in (TEXT, MODELS / "tiny-lfm2-f32.gguf"):
        r = run(geniex_bin, "run", "-m", tmp_path / model.name, "-p", "Hi", *FAST)
        assert r.returncode == 0, r.stderr
        assert "mmproj" not in r.stderr


def test_bad_images_are_clear_errors(geniex_bin, tmp_path):
    corrupt = tmp_path / "corrupt.png"
    corrupt.write_bytes(CAT.read_bytes()[:200])
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(b"this is not an image at all" * 10)
    for bad in (corrupt, junk):
        r = run(geniex_bin, "run", "-m", VL, "--mmproj", MMPROJ, "--image", bad, "-p", "Hi",
                *FAST)
        assert r.returncode == 1, (bad, r.stdout, r.stderr)
        assert bad.name in one_error_line(r.stderr)
    r = run(geniex_bin, "run", "-m", VL, "--mmproj", MMPROJ, "--image", tmp_path / "none.png",
            "-p", "Hi", *FAST)
    assert r.returncode == 1
    assert "none.png" in one_error_line(r.stderr) and "no such file" in r.stderr
    r = run(geniex_bin, "run", "-m", VL, "--mmproj", tmp_path / "no-mmproj.gguf", "-p", "Hi",
            *FAST)
    assert r.returncode == 1 and "no-mmproj.gguf" in r.stderr


def test_text_model_with_an_image(geniex_bin):
    r = run(geniex_bin, "run", "-m", TEXT, "--image", CAT, "-p", "Hi", *FAST)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "takes no images" in line and TEXT.name in line


def test_chat_image_command(geniex_bin):
    turns = "\n".join([
        "/image",                      # nothing attached yet
        f"/image {CAT}",
        f"/image {COFFEE}",
        "/image",                      # lists both
        "What are these?",             # the two images go with this turn
        "And now?",                    # a text turn; the images stay in the conversation
        "/image /no/such/image.png",   # error, the chat goes on
        "/exit",
    ]) + "\n"
    r = run(geniex_bin, "chat", "-m", VL, "--mmproj", MMPROJ, "-v", *FAST, input_text=turns)
    assert r.returncode == 0, r.stderr
    assert "no images attached" in r.stderr
    assert "2 images attached" in r.stderr and CAT.name in r.stderr and COFFEE.name in r.stderr
    assert "image.png" in r.stderr and "no such file" in r.stderr
    assert replies(r.stderr) == 2, r.stderr  # -v: one seed line per reply
    r = run(geniex_bin, "chat", "--help")
    assert "/image" in r.stdout


def test_chat_image_on_a_text_model(geniex_bin):
    r = run(geniex_bin, "chat", "-m", TEXT, "-v", *FAST,
            input_text=f"/image {CAT}\nHi\n/exit\n")
    assert r.returncode == 0, r.stderr
    assert "takes no images" in r.stderr
    assert replies(r.stderr) == 1  # the text turn still got its reply


def test_chat_corrupt_image_fails_that_turn_only(geniex_bin, tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    r = run(geniex_bin, "chat", "-m", VL, "--mmproj", MMPROJ, "-v", *FAST,
            input_text=f"/image {bad}\nWhat is it?\nAnd this?\n/exit\n")
    assert r.returncode == 0, r.stderr
    assert "bad.png" in r.stderr
    assert replies(r.stderr) == 1  # the failed turn is dropped, the next one answered


def test_bench_image(geniex_bin):
    r = run(geniex_bin, "bench", "-m", VL, "--mmproj", MMPROJ, "--image", CAT, "-p", "16", "-n",
            "4", "-r", "1", "-t", "2")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "| pp16 " in out and "| tg4 " in out  # the text table as before
    assert "image test: 1 image, 1 view" in out
    for row in ("| encode/image", "| encode/view", "| prefill", "| ttft", "| tg4"):
        assert row in out.split("image test:")[1], out
    j = run(geniex_bin, "bench", "-m", VL, "--mmproj", MMPROJ, "--image", CAT, "-p", "16", "-n",
            "4", "-r", "2", "-t", "2", "--json")
    assert j.returncode == 0, j.stderr
    img = json.loads(j.stdout)["image"]
    assert img["images"] == 1 and img["views"] >= 1 and img["prompt_tokens"] > 30
    assert len(img["encode_ms"]["samples"]) == 2 and img["encode_ms"]["median"] > 0
    assert img["ttft_ms"]["median"] >= img["encode_ms"]["median"]
    # Decoding + preprocessing is part of encode_ms, reported alone for like-for-like comparisons.
    pre = img["preprocess_ms"]["samples"]
    assert len(pre) == 2 and all(0 < p < e for p, e in zip(pre, img["encode_ms"]["samples"]))
    # Without --image the JSON has no image object.
    t = run(geniex_bin, "bench", "-m", VL, "-p", "16", "-n", "4", "-r", "1", "-t", "2", "--json")
    assert t.returncode == 0, t.stderr
    assert "image" not in json.loads(t.stdout)


def test_bench_image_on_a_text_model(geniex_bin):
    r = run(geniex_bin, "bench", "-m", TEXT, "--image", CAT, "-p", "16", "-n", "4", "-r", "1")
    assert r.returncode == 1 and "takes no images" in r.stderr
