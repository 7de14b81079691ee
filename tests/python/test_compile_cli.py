"""`geniex compile`: fills the QNN HTP plugin's context cache for a tiny model, and a second run
finds everything cached. Needs Qualcomm's runtime (scripts/setup.sh installs PyPI onnxruntime-qnn
and writes .venv/.geniex-qnn-libdir): skipped only when it is absent and setup did not install it,
as the C++ QNN tests (src/backends/npu/qnn/qnn_test_env.h)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "tests/data/models/tiny-llama-f32.gguf"


def qnn_runtime_expected() -> bool:
    marker = REPO / ".venv/.geniex-qnn-libdir"
    return marker.exists() or any(REPO.glob(".venv/lib/python3*/site-packages/onnxruntime_qnn/libQnnHtp.so"))


def compile_run(geniex_bin, build_dir, cache, *extra):
    r = subprocess.run([str(geniex_bin), "compile", "-m", str(MODEL), "--plugin-dir",
                        str(build_dir / "plugins" / "qnn"), "--cache-dir", str(cache), *extra],
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


def compile_once(geniex_bin, build_dir, cache, *extra):
    return compile_run(geniex_bin, build_dir, cache, *extra).stdout


def test_compile_fills_the_cache_then_finds_it_full(geniex_bin, build_dir, tmp_path):
    if not qnn_runtime_expected():
        pytest.skip("QNN runtime not installed (scripts/setup.sh installs onnxruntime-qnn)")
    cache = tmp_path / "qnn"
    first = compile_once(geniex_bin, build_dir, cache)
    assert "whole model -> npu(qnn-htp: Hexagon v73 HTP, SoC 60" in first, first
    new = re.findall(r"^  new ([0-9a-f]{16})\.qnnctx", first, flags=re.M)
    assert len(new) >= 2, first  # a prefill chunk and a decode step
    assert sorted(p.stem for p in cache.glob("*.qnnctx")) == sorted(new)
    second = compile_run(geniex_bin, build_dir, cache, "-v")
    assert "0 new context binaries" in second.stdout, second.stdout
    # -v (the plugin's trace=1): a line per graph, restored from the cache this time.
    restored = re.findall(r"qnn-htp graph [0-9a-f]{16} of \d+ tokens, \d+ nodes: restored from "
                          r"the cache", second.stderr)
    assert len(restored) == len(new), second.stderr
    # Another target: other entries beside the first ones.
    third = compile_once(geniex_bin, build_dir, cache, "--target", "v75")
    assert "Hexagon v75 HTP, SoC 57" in third, third
    assert len(list(cache.glob("*.qnnctx"))) == 2 * len(new)


def test_compile_w8_makes_its_own_entries(geniex_bin, build_dir, tmp_path):
    if not qnn_runtime_expected():
        pytest.skip("QNN runtime not installed (scripts/setup.sh installs onnxruntime-qnn)")
    cache = tmp_path / "qnn"
    fp16 = re.findall(r"^  new ([0-9a-f]{16})", compile_once(geniex_bin, build_dir, cache), re.M)
    w8 = compile_once(geniex_bin, build_dir, cache, "--precision", "w8")
    assert "w8 (int8 per-channel weights" in w8, w8
    new = re.findall(r"^  new ([0-9a-f]{16})", w8, flags=re.M)
    assert len(new) == len(fp16) and not set(new) & set(fp16), (fp16, w8)
    again = compile_once(geniex_bin, build_dir, cache, "--precision", "w8")
    assert "0 new context binaries" in again, again


def test_compile_refuses_other_devices_and_unknown_targets(geniex_bin):
    r = subprocess.run([str(geniex_bin), "compile", "-m", str(MODEL), "--device", "cpu"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "only npu" in r.stderr, r.stderr
    r = subprocess.run([str(geniex_bin), "compile", "-m", str(MODEL), "--target", "v68"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--soc" in r.stderr, r.stderr
    r = subprocess.run([str(geniex_bin), "compile", "-m", str(MODEL), "--precision", "w8a16"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "calibrate on their first real step" in r.stderr, r.stderr
