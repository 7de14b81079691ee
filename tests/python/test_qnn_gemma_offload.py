"""The real Gemma 3 270M (Q4_K_M) with its last layer and the output head on the QNN HTP plugin
(Qualcomm's runtime from PyPI onnxruntime-qnn, emulated on x86-64) and the rest on the CPU
(issue 31): KL divergence against the all-CPU run over one 128-token chunk, and greedy text equal
to the CPU's. Skipped only where setup did not install the runtime, as the C++ QNN tests
(src/backends/npu/qnn/qnn_test_env.h).

Measured (2026-12-05, emulated HTP, fp16): mean KLD 0.0011, max 0.0035, same top-1 98.4 %
(docs/performance.md, "NPU (QNN HTP)": 2 layers 0.0019, all 18 0.0153). Bounds: mean KLD
0.005, same top-1 >= 90 %."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEXT = REPO / "tests/data/models/ppl_text.txt"


def qnn_runtime_expected() -> bool:
    marker = REPO / ".venv/.geniex-qnn-libdir"
    return marker.exists() or any(
        REPO.glob(".venv/lib/python3*/site-packages/onnxruntime_qnn/libQnnHtp.so"))


def geniex(geniex_bin, *args, env=None, timeout=600):
    r = subprocess.run([str(geniex_bin), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


def test_gemma_last_layer_and_head_on_qnn_agree_with_the_cpu(geniex_bin, build_dir, gemma_gguf,
                                                               tmp_path):
    if not qnn_runtime_expected():
        pytest.skip("QNN runtime not installed (scripts/setup.sh installs onnxruntime-qnn)")
    plugins = build_dir / "plugins" / "qnn"
    # One context cache for both runs: perplexity prepares the 128-token graph, run reuses it
    # and prepares the decode graph.
    npu = ["--device", "npu", "--offload-layers", "1", "--npu-config",
           f"cache_dir={tmp_path / 'qnn'}"]
    base = tmp_path / "cpu.kld"
    common = ["-m", gemma_gguf, "-f", TEXT, "-c", 128, "--chunks", 1]
    geniex(geniex_bin, "perplexity", *common, "--device", "cpu", "--kl-divergence-base", base)
    env = dict(os.environ, GENIEX_PLUGIN_DIR=str(plugins))
    r = geniex(geniex_bin, "perplexity", "-v", *common, *npu, "--kl-divergence",
               "--kl-divergence-base", base, env=env)
    out = r.stdout + r.stderr
    # Placement: the embedding and layers 0..16 on the CPU, layer 17 and the head on QNN.
    assert re.search(r"embedding \.\. layer 16 -> cpu\(.*layer 17 \.\. output -> npu\(qnn-htp",
                     out), out
    kld = float(re.search(r"Mean\s+KLD:\s+([0-9.]+)", out).group(1))
    top = float(re.search(r"Same top p:\s+([0-9.]+)", out).group(1))
    assert kld < 0.005, out
    assert top >= 90.0, out

    prompt = ["--raw", "--temp", 0, "-n", 16, "--ignore-eos", "-p",
              "The capital of France is Paris. The capital of Germany is"]
    cpu_text = geniex(geniex_bin, "run", "-m", gemma_gguf, "--device", "cpu", *prompt).stdout
    npu_text = geniex(geniex_bin, "run", "-m", gemma_gguf, *npu, *prompt, env=env).stdout
    assert npu_text == cpu_text and len(cpu_text) > 20, (cpu_text, npu_text)
