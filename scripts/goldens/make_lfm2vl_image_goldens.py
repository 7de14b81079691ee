#!/usr/bin/env python3
"""LFM2-VL image preprocessing goldens: tests/data/vision/lfm2vl_image_goldens.json.

The judge is Hugging Face transformers' Lfm2VlImageProcessor (torchvision backend) and
Lfm2VlProcessor; PIL decodes the files and converts them with .convert("RGB") as
transformers.image_utils.load_image does. Goldens tooling only (not run by the build, tests or
CI). Run with the goldens venv:

    ~/.cache/geniex-goldens/venv/bin/pip install transformers==5.23.0 torchvision pillow scikit-image
    ~/.cache/geniex-goldens/venv/bin/python scripts/goldens/make_lfm2vl_image_goldens.py

Inputs: photos from scikit-image's wheel (skimage/data, public domain / CC0, see
tests/data/vision/SOURCES.md), copied or re-encoded into tests/data/vision/. Big derived cases are
not committed: they are made from a committed photo by exact integer nearest-neighbour
upsampling (out[y][x] = src[y * h // H][x * w // W]), which the C++ test repeats bit for bit.

Per case and per use_thumbnail (true, false) the golden keeps the layout (grid, thumbnail,
smart_resize size) and per view: size, patch grid, tokens, SHA-256 of the uint8 view (H x W x 3),
of the float32 pixels (H x W x 3, little endian) and of transformers' pixel_values rows for the
view (patches x 768, unpadded), plus sampled float values. It also keeps the processor's
input_ids for a three-image prompt (tiny WordLevel tokenizer with the LFM2 marker ids).
JPEG cases are held to the same exact hashes: the C++ side decodes JPEG with libjpeg-turbo set
up as Pillow's JpegDecoder (see src/vision/README.md). The JPEG inputs cover baseline 4:2:0
(rocket.jpg, as shipped), progressive 4:2:0, baseline and progressive 4:4:4, 4:2:2, grey (one
component) and Adobe CMYK.
"""
import hashlib
import io
import json
import os
import shutil
import sys

import numpy as np
import PIL
import skimage
import torch
import torchvision
import transformers
from PIL import Image
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import Lfm2VlImageProcessor, Lfm2VlProcessor, PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "vision")
SKDATA = os.path.join(os.path.dirname(skimage.__file__), "data")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def nearest(rgb, width, height):
    """Exact integer nearest-neighbour resample (repeated by the C++ test)."""
    h, w, _ = rgb.shape
    ys = (np.arange(height, dtype=np.int64) * h) // height
    xs = (np.arange(width, dtype=np.int64) * w) // width
    return np.ascontiguousarray(rgb[ys][:, xs])


def write_inputs():
    """Copies / re-encodes the committed inputs; returns {file name: PIL format note}."""
    os.makedirs(OUT, exist_ok=True)
    for name in ["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "camera.png",
                 "horse.png"]:
        shutil.copyfile(os.path.join(SKDATA, name), os.path.join(OUT, name))
    chelsea = Image.open(os.path.join(SKDATA, "chelsea.png")).convert("RGB")
    coffee = Image.open(os.path.join(SKDATA, "coffee.png")).convert("RGB")
    chelsea.quantize(colors=64, dither=Image.Dither.NONE).save(
        os.path.join(OUT, "chelsea_palette.gif"))
    chelsea.save(os.path.join(OUT, "chelsea_lossless.webp"), lossless=True)
    coffee.crop((100, 50, 300, 250)).save(os.path.join(OUT, "coffee_lossy.webp"), quality=80)
    coffee.crop((0, 0, 200, 150)).save(os.path.join(OUT, "coffee_crop.bmp"))
    # RGBA with a real alpha ramp (PIL's convert("RGB") drops alpha without compositing).
    crop = np.asarray(chelsea.crop((0, 0, 160, 120)))
    alpha = np.tile(np.linspace(0, 255, 160).astype(np.uint8), (120, 1))[..., None]
    Image.fromarray(np.concatenate([crop, alpha], axis=2), "RGBA").save(
        os.path.join(OUT, "chelsea_rgba.png"))
    # JPEG variants, re-encoded by Pillow's libjpeg-turbo at fixed settings (small crops).
    coffee.crop((150, 0, 450, 200)).save(os.path.join(OUT, "coffee_444.jpg"), quality=90,
                                          subsampling=0)
    chelsea.save(os.path.join(OUT, "chelsea_progressive.jpg"), quality=80, progressive=True)
    chelsea.crop((101, 30, 332, 207)).save(os.path.join(OUT, "chelsea_444_progressive.jpg"),
                                           quality=85, subsampling=0, progressive=True)
    coffee.crop((0, 100, 257, 283)).save(os.path.join(OUT, "coffee_422.jpg"), quality=85,
                                         subsampling=1)
    Image.open(os.path.join(SKDATA, "camera.png")).crop((64, 64, 363, 311)).save(
        os.path.join(OUT, "camera_grey.jpg"), quality=85)
    chelsea.crop((150, 60, 311, 181)).convert("CMYK").save(os.path.join(OUT, "chelsea_cmyk.jpg"),
                                                           quality=90)


def write_fuzz_seeds():
    """Small crops of the test photos in every format for tests/fuzz/corpus/image (byte 0 of
    a fuzz input selects the processor parameters, see tests/fuzz/fuzz_image.cpp)."""
    seeds = os.path.join(ROOT, "tests", "fuzz", "corpus", "image")
    os.makedirs(seeds, exist_ok=True)
    chelsea = Image.open(os.path.join(SKDATA, "chelsea.png")).convert("RGB").crop((200, 100, 248, 132))
    variants = {
        "png": lambda im, b: im.save(b, "PNG"),
        "grey.png": lambda im, b: im.convert("L").save(b, "PNG"),
        "rgba.png": lambda im, b: im.convert("RGBA").save(b, "PNG"),
        "palette.png": lambda im, b: im.quantize(16).save(b, "PNG"),
        "jpg": lambda im, b: im.save(b, "JPEG", quality=75),
        "progressive.jpg": lambda im, b: im.save(b, "JPEG", quality=75, progressive=True),
        "gif": lambda im, b: im.quantize(16).save(b, "GIF"),
        "bmp": lambda im, b: im.save(b, "BMP"),
        "webp": lambda im, b: im.save(b, "WEBP", quality=60),
        "lossless.webp": lambda im, b: im.save(b, "WEBP", lossless=True),
    }
    for name, save in variants.items():
        buf = io.BytesIO()
        save(chelsea, buf)
        for prefix in (0, 1):
            with open(os.path.join(seeds, f"chelsea_48x32_p{prefix}.{name}"), "wb") as fh:
                fh.write(bytes([prefix]) + buf.getvalue())


# (case name, committed file, derived size (w, h) or None)
CASES = [
    ("astronaut", "astronaut.png", None),            # 512 x 512: not tiled, resized to 512
    ("coffee", "coffee.png", None),                  # 600 x 400
    ("chelsea", "chelsea.png", None),                # 451 x 300
    ("rocket", "rocket.jpg", None),                  # 427 x 640 JPEG
    ("camera_grey", "camera.png", None),             # mode L
    ("horse_rgba", "horse.png", None),               # mode RGBA (binary alpha)
    ("chelsea_rgba", "chelsea_rgba.png", None),      # mode RGBA (alpha ramp)
    ("chelsea_palette_gif", "chelsea_palette.gif", None),
    ("chelsea_lossless_webp", "chelsea_lossless.webp", None),
    ("coffee_lossy_webp", "coffee_lossy.webp", None),
    ("coffee_crop_bmp", "coffee_crop.bmp", None),
    ("coffee_444_jpg", "coffee_444.jpg", None),                  # 300 x 200 baseline 4:4:4
    ("chelsea_progressive_jpg", "chelsea_progressive.jpg", None),  # 451 x 300 progressive 4:2:0
    ("chelsea_444_progressive_jpg", "chelsea_444_progressive.jpg", None),  # 231 x 177
    ("coffee_422_jpg", "coffee_422.jpg", None),                  # 257 x 183 4:2:2
    ("camera_grey_jpg", "camera_grey.jpg", None),                # 299 x 247 one component
    ("chelsea_cmyk_jpg", "chelsea_cmyk.jpg", None),              # 161 x 121 Adobe CMYK
    ("rocket_1280x854", "rocket.jpg", (1280, 854)),              # JPEG, tiled
    ("coffee_1536x1024", "coffee.png", (1536, 1024)),  # 3 x 2 tiles + thumbnail
    ("chelsea_1000x3000", "chelsea.png", (1000, 3000)),  # 1 x 3
    ("coffee_2000x100", "coffee.png", (2000, 100)),    # half-even rounding, extreme aspect
    ("chelsea_640x480", "chelsea.png", (640, 480)),    # not tiled, 576 x 416
    ("chelsea_384x256", "chelsea.png", (384, 256)),    # no resize
    ("astronaut_1024x977", "astronaut.png", (1024, 977)),  # 2 x 2 (tie rule)
    ("astronaut_721x721", "astronaut.png", (721, 721)),    # smallest tiled square
    ("astronaut_720x720", "astronaut.png", (720, 720)),    # largest untiled square
]


def load_case(file, derived):
    im = Image.open(os.path.join(OUT, file))
    mode = im.mode
    rgb = np.asarray(im.convert("RGB"))
    if derived is not None:
        rgb = nearest(rgb, *derived)
    return mode, rgb


def views_of(out, n_views):
    """Unpadded per-view patch rows and (hp, wp) from a processor output."""
    shapes = out["spatial_shapes"].tolist()
    assert len(shapes) == n_views
    return [(out["pixel_values"][i, : hp * wp], hp, wp) for i, (hp, wp) in enumerate(shapes)]


def unpatchify(rows, hp, wp, p=16):
    return rows.reshape(hp, wp, p, p, 3).permute(0, 2, 1, 3, 4).reshape(hp * p, wp * p, 3)


def run_case(rgb, use_thumbnail):
    proc = Lfm2VlImageProcessor(use_thumbnail=use_thumbnail)
    pil = Image.fromarray(rgb, "RGB")
    f = proc(images=[pil], return_tensors="pt", return_row_col_info=True)
    u = proc(images=[pil], return_tensors="pt", return_row_col_info=True,
             do_rescale=False, do_normalize=False)
    assert f["pixel_values"].dtype == torch.float32 and u["pixel_values"].dtype == torch.uint8
    n = f["spatial_shapes"].shape[0]
    rows, cols = int(f["image_rows"][0]), int(f["image_cols"][0])
    tiled = rows * cols > 1
    views = []
    fv, uv = views_of(f, n), views_of(u, n)
    rng = np.random.default_rng(1234)
    for i in range(n):
        frows, hp, wp = fv[i]
        urows, _, _ = uv[i]
        fimg = unpatchify(frows, hp, wp).contiguous().numpy()
        uimg = unpatchify(urows, hp, wp).contiguous().numpy()
        assert fimg.dtype == np.float32 and uimg.dtype == np.uint8
        samples = []
        for _ in range(6):
            y, x, c = int(rng.integers(hp * 16)), int(rng.integers(wp * 16)), int(rng.integers(3))
            samples.append([y, x, c, float(fimg[y, x, c])])
        views.append({
            "height": hp * 16, "width": wp * 16, "patches_h": hp, "patches_w": wp,
            "tokens": ((hp + 1) // 2) * ((wp + 1) // 2),
            "is_thumbnail": bool(tiled and use_thumbnail and i == n - 1),
            "uint8_sha256": sha(uimg.tobytes()),
            "float32_sha256": sha(fimg.astype("<f4").tobytes()),
            "pixel_values_sha256": sha(frows.contiguous().numpy().astype("<f4").tobytes()),
            "samples": samples,
        })
    return {
        "use_thumbnail": use_thumbnail,
        "grid_rows": rows, "grid_cols": cols, "tiled": tiled,
        "has_thumbnail": bool(tiled and use_thumbnail),
        "resized": [int(v) for v in f["image_sizes"][0]],
        "views": views,
    }


def tiny_tokenizer():
    vocab = {"<|pad|>": 0, "<|startoftext|>": 1, "<|endoftext|>": 2, "<unk>": 3, "describe": 4,
             "and": 5, "<image>": 396, "<|img_thumbnail|>": 497, "<|image_start|>": 498,
             "<|image_end|>": 499}
    for r in range(1, 11):
        for c in range(1, 11):
            vocab[f"<|img_row_{r}_col_{c}|>"] = 397 + 10 * (r - 1) + (c - 1)
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    specials = [k for k in vocab if k.startswith("<")]
    tok.add_special_tokens(specials)
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<|pad|>")


def prompt_golden(images_by_case):
    tok = tiny_tokenizer()
    proc = Lfm2VlProcessor(image_processor=Lfm2VlImageProcessor(use_thumbnail=True), tokenizer=tok)
    names = ["coffee_1536x1024", "chelsea_640x480", "chelsea_1000x3000"]
    text = "describe <image> and <image><image>"
    pils = [Image.fromarray(images_by_case[n], "RGB") for n in names]
    out = proc(images=[pils], text=[text])
    ids = out["input_ids"][0]
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    return {"cases": names, "text": text, "use_thumbnail": True,
            "text_ids": {"describe": 4, "and": 5}, "input_ids": ids}


def main():
    write_inputs()
    write_fuzz_seeds()
    golden = {
        "generator": "scripts/goldens/make_lfm2vl_image_goldens.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "torchvision": torchvision.__version__, "pillow": PIL.__version__,
                     "numpy": np.__version__, "scikit-image": skimage.__version__,
                     "python": sys.version.split()[0]},
        "derivation": "out[y][x] = src[y * h // H][x * w // W] (integers) of the RGB-converted file",
        "cases": [],
    }
    images_by_case = {}
    for name, file, derived in CASES:
        mode, rgb = load_case(file, derived)
        images_by_case[name] = rgb
        entry = {"name": name, "file": file, "pil_mode": mode,
                 "derived_size": list(derived) if derived else None,
                 "width": int(rgb.shape[1]), "height": int(rgb.shape[0]),
                 "decoded_sha256": sha(rgb.tobytes()),
                 "runs": [run_case(rgb, t) for t in (True, False)]}
        golden["cases"].append(entry)
        r = entry["runs"][0]
        print(f"{name:24s} {rgb.shape[1]}x{rgb.shape[0]} {mode:5s} grid {r['grid_cols']}x"
              f"{r['grid_rows']} views {len(r['views'])} tokens "
              f"{sum(v['tokens'] for v in r['views'])}")
    golden["prompt"] = prompt_golden(images_by_case)
    with open(os.path.join(OUT, "lfm2vl_image_goldens.json"), "w") as fh:
        json.dump(golden, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
