"""geniex quantize against llama-quantize (built by scripts/setup.sh from the pinned
llama-cpp-python sdist): the same files byte for byte, for every type, on the tiny model of each
architecture and on the same models widened to 256-multiple rows; the same with an importance
matrix; and bad input leaves no file behind."""
from __future__ import annotations

import os
import struct

import gguf
import numpy as np
import pytest

from conftest import REPO, run

MODELS = REPO / "tests" / "data" / "models"
ARCHS = ["llama", "mistral", "qwen2", "qwen3", "gemma3", "lfm2"]
TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
         "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "F16", "BF16", "F32"]
WEIGHTED = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_S", "Q6_K",
            "IQ4_NL", "IQ4_XS"]


def widen(src, dst, factor=4, seed=0):
    """The model `src` with every tensor's rows `factor` times longer and random F16 weights
    (a few outliers): same metadata and names, so llama.cpp's policy treats it the same, but
    rows of 256 and more so the K-quant and IQ4 quantizers run instead of their fallbacks."""
    r = gguf.GGUFReader(src)
    raw = src.read_bytes()
    start = r.tensors[0].field.offset
    rng = np.random.default_rng(seed)
    infos, datas, off = bytearray(), [], 0
    for t in r.tensors:
        ne = [int(x) for x in t.field.parts[3]]
        ne[0] *= factor
        name = t.name.encode()
        infos += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(ne))
        infos += b"".join(struct.pack("<Q", d) for d in ne)
        n = int(np.prod(ne))
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            ty, data = 0, (1 + 0.1 * rng.standard_normal(n)).astype(np.float32).tobytes()
        else:
            x = 0.05 * rng.standard_normal(n)
            x[rng.integers(0, n, max(1, n // 500))] *= 20
            ty, data = 1, x.astype(np.float16).tobytes()
        infos += struct.pack("<IQ", ty, off)
        datas.append(data)
        off += (len(data) + 31) // 32 * 32
    out = bytearray(raw[:start]) + infos
    out += b"\0" * (-len(out) % 32)
    for d in datas:
        out += d + b"\0" * (-len(d) % 32)
    dst.write_bytes(bytes(out))


def write_imatrix(model, dst, seed=1, scale=1, prefix=""):
    """An importance matrix in llama-imatrix's GGUF format for every 2-D weight of `model`
    (positive per-column sums, a count of 10 each), `scale` times too many columns or the names
    under `prefix` if asked."""
    r = gguf.GGUFReader(model)
    w = gguf.GGUFWriter(str(dst), arch="imatrix")
    rng = np.random.default_rng(seed)
    w.add_array("imatrix.datasets", ["test.txt"])
    w.add_uint32("imatrix.chunk_count", 3)
    w.add_uint32("imatrix.chunk_size", 64)
    for t in r.tensors:
        if len(t.shape) < 2 or not t.name.endswith(".weight"):
            continue
        ncols = int(t.shape[0]) * scale
        name = prefix + t.name
        w.add_tensor(name + ".in_sum2", (rng.random(ncols) * 5 + 0.01).astype(np.float32))
        w.add_tensor(name + ".counts", np.array([10.0], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("quant_models")
    out = {}
    for a in ARCHS:
        src = MODELS / f"tiny-{a}-f16.gguf"
        out[a] = src
        widen(src, d / f"wide-{a}.gguf")
        out["wide-" + a] = d / f"wide-{a}.gguf"
    return out


@pytest.fixture(scope="module")
def llama_quantize(llamacpp_bin):
    return llamacpp_bin("llama-quantize")


def both(geniex_bin, llama_quantize, tmp, src, qtype, *flags, tag=""):
    """Runs llama-quantize and geniex quantize with the same flags; returns both outputs."""
    ref, ours = tmp / f"ref{tag}.gguf", tmp / f"ours{tag}.gguf"
    r = run([llama_quantize, *flags, src, ref, qtype, "2"])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    g = run([geniex_bin, "quantize", *flags, src, ours, qtype, "-t", "2"])
    assert g.returncode == 0, g.stderr
    return ref.read_bytes(), ours.read_bytes(), g


@pytest.mark.parametrize("qtype", TYPES)
def test_byte_identical_to_llama_quantize(geniex_bin, llama_quantize, models, tmp_path, qtype):
    differ = []
    for name, src in models.items():
        ref, ours, _ = both(geniex_bin, llama_quantize, tmp_path, src, qtype)
        if ref != ours:
            differ.append(name)
    assert not differ, f"{qtype}: differs from llama-quantize on {differ}"


@pytest.mark.parametrize("flags", [["--pure"], ["--leave-output-tensor"],
                                   ["--output-tensor-type", "q8_0"],
                                   ["--token-embedding-type", "q8_0"],
                                   ["--output-tensor-type", "q5_K", "--token-embedding-type", "q4_0"]])
def test_flags_match_llama_quantize(geniex_bin, llama_quantize, models, tmp_path, flags):
    for name in ["wide-llama", "wide-gemma3"]:
        ref, ours, _ = both(geniex_bin, llama_quantize, tmp_path, models[name], "Q4_K_M", *flags)
        assert ref == ours, f"{flags} on {name}"


@pytest.mark.parametrize("qtype", ["Q4_K_M", "Q8_0", "IQ4_NL", "BF16"])
def test_f32_sources_match_llama_quantize(geniex_bin, llama_quantize, tmp_path, qtype):
    for arch in ["llama", "gemma3", "lfm2", "lfm2vl"]:
        ref, ours, _ = both(geniex_bin, llama_quantize, tmp_path, MODELS / f"tiny-{arch}-f32.gguf", qtype)
        assert ref == ours, f"{qtype} from F32 on {arch}"


@pytest.mark.parametrize("qtype", WEIGHTED)
def test_imatrix_byte_identical(geniex_bin, llama_quantize, models, tmp_path, qtype):
    for name in ["wide-qwen3", "wide-gemma3", "llama"]:
        im = tmp_path / f"imatrix-{name}.gguf"
        write_imatrix(models[name], im)
        ref, ours, g = both(geniex_bin, llama_quantize, tmp_path, models[name], qtype,
                            "--imatrix", im, tag=name)
        assert b"quantize.imatrix.file" in ours and "importance matrix" in g.stdout
        assert ref == ours, f"{qtype} with an imatrix on {name}"
        if name.startswith("wide-"):
            # The weighted search really ran: some tensor differs from the plain quantization.
            plain = tmp_path / "plain.gguf"
            assert run([geniex_bin, "quantize", models[name], plain, qtype]).returncode == 0
            a, b = tensor_bytes(plain), tensor_bytes(tmp_path / f"ours{name}.gguf")
            assert any(a[k] != b[k] for k in a), f"{qtype}: the imatrix changed nothing"


def tensor_bytes(path):
    return {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(path).tensors}


def test_llama_imatrix_output_is_read(geniex_bin, llamacpp_bin, llama_quantize, tmp_path):
    """An importance matrix computed by llama-imatrix itself, read by both quantizers."""
    im = tmp_path / "imatrix.gguf"
    r = run([llamacpp_bin("llama-imatrix"), "-m", MODELS / "tiny-llama-f32.gguf",
             "-f", MODELS / "ppl_text.txt", "-o", im, "-c", "64", "--chunks", "2", "-t", "2"])
    assert r.returncode == 0 and im.exists(), r.stderr[-2000:]
    ref, ours, _ = both(geniex_bin, llama_quantize, tmp_path, MODELS / "tiny-llama-f16.gguf",
                        "Q4_0", "--imatrix", im)
    assert ref == ours


def test_summary_and_sizes(geniex_bin, models, tmp_path):
    out = tmp_path / "q.gguf"
    r = run([geniex_bin, "quantize", models["wide-llama"], out, "q4_k_m", "-t", "2"])
    assert r.returncode == 0, r.stderr
    assert "as Q4_K_M" in r.stdout
    assert "model size" in r.stdout and "quant size" in r.stdout and "BPW" in r.stdout
    f = gguf.GGUFReader(out)
    assert int(f.fields["general.file_type"].parts[-1][0]) == 15
    types = {t.name: t.tensor_type.name for t in f.tensors}
    assert types["output.weight"] == "Q6_K" and types["blk.1.attn_q.weight"] == "Q4_K"
    assert types["output_norm.weight"] == "F32"


def no_leftovers(d, name):
    return [p.name for p in d.iterdir() if p.name.startswith(name)]


def test_bad_input_leaves_nothing(geniex_bin, models, tmp_path):
    out = tmp_path / "out.gguf"
    src = models["llama"]

    r = run([geniex_bin, "quantize", src, out, "Q4_K_X"])
    assert r.returncode == 2 and "unknown quantization type" in r.stderr and "Q4_K_M" in r.stderr
    r = run([geniex_bin, "quantize", src, out, "Q4_0", "--output-tensor-type", "q9"])
    assert r.returncode == 2 and "unknown tensor type" in r.stderr

    # A type a tensor cannot take: q4_K needs rows of 256, the tiny model's are 64.
    r = run([geniex_bin, "quantize", src, out, "Q4_0", "--output-tensor-type", "q4_K"])
    assert r.returncode == 1 and "output.weight" in r.stderr and "cannot take" in r.stderr

    # Already quantized.
    r = run([geniex_bin, "quantize", MODELS / "tiny-llama-q8_0.gguf", out, "Q4_0"])
    assert r.returncode == 1 and "requantizing" in r.stderr

    # Truncated input.
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    r = run([geniex_bin, "quantize", cut, out, "Q4_0"])
    assert r.returncode == 1 and r.stderr.strip()

    # An imatrix for another model: wrong sizes, and no matching names at all.
    im = tmp_path / "wrong.gguf"
    write_imatrix(src, im, scale=2)
    r = run([geniex_bin, "quantize", src, out, "Q4_0", "--imatrix", im])
    assert r.returncode == 1 and "does not fit this model" in r.stderr
    other = tmp_path / "other.gguf"
    write_imatrix(src, other, prefix="model.")
    r = run([geniex_bin, "quantize", src, out, "Q4_0", "--imatrix", other])
    assert r.returncode == 1 and "another model" in r.stderr
    garbage = tmp_path / "garbage.dat"
    garbage.write_bytes(b"\x05\x00\x00\x00abc")
    r = run([geniex_bin, "quantize", src, out, "Q4_0", "--imatrix", garbage])
    assert r.returncode == 1 and "imatrix" in r.stderr

    # Same file in and out.
    r = run([geniex_bin, "quantize", src, src, "Q4_0"])
    assert r.returncode == 1 and "same file" in r.stderr

    assert not no_leftovers(tmp_path, "out.gguf")


def test_failure_keeps_an_existing_output(geniex_bin, models, tmp_path):
    out = tmp_path / "keep.gguf"
    out.write_bytes(b"previous")
    r = run([geniex_bin, "quantize", MODELS / "tiny-llama-q8_0.gguf", out, "Q4_0"])
    assert r.returncode == 1
    assert out.read_bytes() == b"previous"
    assert no_leftovers(tmp_path, "keep.gguf") == ["keep.gguf"]


def test_threads_do_not_change_the_bytes(geniex_bin, models, tmp_path):
    outs = []
    for t in ["1", "3"]:
        out = tmp_path / f"t{t}.gguf"
        assert run([geniex_bin, "quantize", models["wide-qwen2"], out, "Q4_K_M", "-t", t]).returncode == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
