"""Judge tests for src/quant: our dequantizers and quantizers against the `gguf` PyPI package.

Dequantization must be bit-exact for every type gguf-py can dequantize; quantization must be
byte-identical for every type gguf-py can quantize. The C++ side is driven through the
tests/tools/quant_check helper binary.
"""
import platform

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

from conftest import run

N_BLOCKS = 1024

# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    "Q4_0": [0],
    "Q4_1": [0, 2],
    "Q5_0": [0],
    "Q5_1": [0, 2],
    "Q8_0": [0],
    "Q2_K": [80, 82],
    "Q3_K": [108],
    "Q4_K": [0, 2],
    "Q5_K": [0, 2],
    "Q6_K": [208],
    "IQ4_NL": [0],
    "IQ4_XS": [0],
    "MXFP4": [],  # E8M0 scale: every byte value is a finite power of two (or overflows to inf)
}
DEQUANT_TYPES = ["F16", "BF16"] + list(F16_FIELDS)
QUANT_TYPES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]


def _seed(name: str) -> int:
    return sum(ord(c) * 31**i for i, c in enumerate(name)) % 2**32


def _finite_f16_bits(rng, n):
    """Random f16 bit patterns covering zero, subnormals, normals and both signs, never Inf/NaN."""
    bits = rng.integers(0, 0x10000, size=n, dtype=np.uint32).astype(np.uint16)
    exp_all_ones = ((bits >> 10) & 0x1F) == 0x1F
    return np.where(exp_all_ones, bits & np.uint16(0xBFFF), bits).astype(np.uint16)


def _random_blocks(name: str) -> np.ndarray:
    rng = np.random.default_rng(_seed(name))
    block_size, type_size = GGML_QUANT_SIZES[T[name]]
    if name in ("F16", "BF16"):
        # Raw 16-bit patterns: every value incl. subnormals, infinities and NaNs.
        return rng.integers(0, 256, size=N_BLOCKS * 256 * 2, dtype=np.uint16).astype(np.uint8)
    data = rng.integers(0, 256, size=(N_BLOCKS, type_size), dtype=np.uint16).astype(np.uint8)
    for off in F16_FIELDS[name]:
        data[:, off:off + 2] = _finite_f16_bits(rng, N_BLOCKS).view(np.uint8).reshape(N_BLOCKS, 2)
    # A few special blocks: all zero bytes, all 0xFF payload with unit scales.
    data[0, :] = 0
    data[1, :] = 0xFF
    for off in F16_FIELDS[name]:
        data[1, off:off + 2] = np.array([1.0], dtype=np.float16).view(np.uint8)
    return data.reshape(-1)


def _assert_bits_equal(ours: np.ndarray, ref: np.ndarray, what: str):
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} != {ref.shape}"
    a = ours.view(np.uint32)
    b = ref.view(np.uint32)
    both_nan = np.isnan(ours) & np.isnan(ref)
    bad = (a != b) & ~both_nan
    if bad.any():
        idx = np.flatnonzero(bad)
        i = idx[0]
        pytest.fail(f"{what}: {idx.size} mismatching elements; first at {i}: "
                    f"ours {ours[i]!r} (0x{a[i]:08x}) vs gguf {ref[i]!r} (0x{b[i]:08x})")


@pytest.fixture(scope="module")
def quant_check(tool_bin):
    return tool_bin("quant_check")


def _run_tool(quant_check, mode, name, data: np.ndarray, tmp_path) -> bytes:
    src = tmp_path / f"{mode}_{name}.in"
    dst = tmp_path / f"{mode}_{name}.out"
    src.write_bytes(data.tobytes())
    r = run([quant_check, mode, name, src, dst])
    assert r.returncode == 0, f"quant_check {mode} {name} failed: {r.stderr}"
    return dst.read_bytes()


@pytest.mark.parametrize("name", DEQUANT_TYPES)
def test_dequantize_bit_exact(name, quant_check, tmp_path):
    data = _random_blocks(name)
    with np.errstate(over="ignore"):  # MXFP4 scales up to 2^127 overflow, identically on both sides
        ref = np.asarray(quants.dequantize(data, T[name]), dtype=np.float32).reshape(-1)
    ours = np.frombuffer(_run_tool(quant_check, "dequant", name, data, tmp_path), dtype="<f4")
    assert ours.size >= 1000 * GGML_QUANT_SIZES[T[name]][0] or name in ("F16", "BF16")
    _assert_bits_equal(ours, ref, f"dequantize {name}")


def _quant_input(name: str) -> np.ndarray:
    """Rows of 256 f32 values at many scales plus hand-made awkward blocks."""
    rng = np.random.default_rng(_seed("quant" + name))
    rows = []
    for scale in (1e-30, 1e-6, 1e-3, 0.05, 1.0, 7.0, 300.0, 6e4, 1e5, 1e30):
        rows.append(rng.standard_normal((48, 256)) * scale)
        rows.append(rng.uniform(-scale, scale, (16, 256)))
        rows.append(rng.uniform(0, scale, (8, 256)))      # all positive (min > 0)
        rows.append(-rng.uniform(0, scale, (8, 256)))     # all negative
    special = np.zeros((16, 256))
    special[1] = -0.0                                     # negative zeros
    special[2] = 1.5                                      # constant blocks
    special[3] = -2.25
    special[4] = rng.standard_normal(256) * 0.01
    special[4, ::32] = 100.0                              # a single large outlier per block
    special[5] = rng.standard_normal(256) * 0.01
    special[5, 7::32] = -100.0                            # negative max |x|
    special[6] = np.tile([1.0, -1.0], 128)                # ties in |x|: first one wins
    special[7] = np.tile([-1.0, 1.0], 128)
    special[8] = rng.integers(-16, 17, 256) * 0.5         # exact half-way values
    special[9] = rng.integers(-127, 128, 256) / 127.0     # values on the Q8_0 grid
    special[10] = np.arange(256) - 128.0
    special[11] = rng.standard_normal(256) * 1e-8
    special[11, ::2] = 0.0
    special[12, 0] = -0.0
    special[12, 1:] = 0.0
    special[13] = rng.integers(0, 16, 256) * 0.125 - 1.0  # on a Q4_1-like grid
    special[14] = 2.0 ** rng.integers(-20, 15, 256)       # powers of two (f16/bf16 exact)
    special[15] = (1 + rng.integers(0, 1024, 256) / 2048.0)  # f16 round-to-even ties
    rows.append(special)
    # Signed zeros mixed with values of one sign: the block min (or max) is a zero whose sign
    # depends on numpy's reduction tie rule.
    zeros = np.where(rng.random((16, 256)) < 0.5, 0.0, -0.0)
    vals = rng.uniform(0.1, 2.0, (16, 256))
    keep = rng.random((16, 256)) < 0.6
    rows.append(np.where(keep, zeros, vals))
    rows.append(np.where(keep, zeros, -vals))
    return np.concatenate(rows).astype(np.float32)


@pytest.mark.parametrize("name", QUANT_TYPES)
def test_quantize_byte_identical(name, quant_check, tmp_path):
    x = _quant_input(name)
    with np.errstate(over="ignore"):  # f16 scales of huge blocks overflow to inf on both sides
        ref = np.asarray(quants.quantize(x, T[name])).view(np.uint8).reshape(-1)
    ours = np.frombuffer(_run_tool(quant_check, "quant", name, x, tmp_path), dtype=np.uint8)
    assert ours.size == ref.size
    if not np.array_equal(ours, ref):
        block_size, type_size = GGML_QUANT_SIZES[T[name]]
        bad = np.flatnonzero(ours != ref)
        blk = bad[0] // type_size
        pytest.fail(f"quantize {name}: {bad.size} mismatching bytes; first in block {blk}: "
                    f"ours {ours[blk * type_size:(blk + 1) * type_size].tobytes().hex()} vs "
                    f"gguf {ref[blk * type_size:(blk + 1) * type_size].tobytes().hex()}; input "
                    f"{x.reshape(-1)[blk * block_size:(blk + 1) * block_size][:8]}...")


@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"])
def test_quantize_then_dequantize_matches_gguf(name, quant_check, tmp_path):
    """Our quantize followed by our dequantize equals gguf's quantize followed by dequantize."""
    x = (np.random.default_rng(_seed("rt" + name)).standard_normal(32 * 1024)).astype(np.float32)
    q = np.frombuffer(_run_tool(quant_check, "quant", name, x, tmp_path), dtype=np.uint8)
    ours = np.frombuffer(_run_tool(quant_check, "dequant", name, q, tmp_path), dtype="<f4")
    ref = quants.dequantize(quants.quantize(x, T[name]), T[name]).reshape(-1)
    _assert_bits_equal(ours, ref.astype(np.float32), f"round trip {name}")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="numpy's out-of-range float->int cast is platform-specific")
@pytest.mark.parametrize("name", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"])
def test_quantize_degenerate_scales_x86(name, quant_check, tmp_path):
    """Subnormal / near-FLT_MAX blocks, where 1/d overflows and numpy casts inf/NaN to integers:
    quant_check emulates x86-64's cast, so even these stay byte-identical there."""
    rng = np.random.default_rng(_seed("deg" + name))
    x = np.concatenate([rng.standard_normal((32, 32)) * s for s in (1e-38, 1e-40, 1e-44, 3e38)])
    x = np.clip(x, -3.4e38, 3.4e38).astype(np.float32)
    with np.errstate(all="ignore"):
        ref = np.asarray(quants.quantize(x, T[name])).view(np.uint8).reshape(-1)
    ours = np.frombuffer(_run_tool(quant_check, "quant", name, x, tmp_path), dtype=np.uint8)
    assert np.array_equal(ours, ref)


def test_rejects_bad_sizes(quant_check, tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\0" * 17)  # not a whole Q4_0 block
    r = run([quant_check, "dequant", "Q4_0", bad, tmp_path / "o.bin"])
    assert r.returncode == 1 and "Q4_0" in r.stderr
    bad.write_bytes(b"\0" * (4 * 31))  # 31 floats: not a whole Q8_0 block
    r = run([quant_check, "quant", "Q8_0", bad, tmp_path / "o.bin"])
    assert r.returncode == 1
    r = run([quant_check, "dequant", "IQ2_XXS", bad, tmp_path / "o.bin"])
    assert r.returncode == 1
    r = run([quant_check, "dequant", "NOPE", bad, tmp_path / "o.bin"])
    assert r.returncode == 2
