#!/usr/bin/env python3
"""Writes the safetensors fuzz seed corpus (tests/fuzz/corpus/safetensors) with the
`safetensors` PyPI package's writer, so the seeds come from an implementation that is not ours.
Rerun to regenerate (needs numpy + safetensors, e.g. the goldens venv)."""
import pathlib

import numpy as np
from safetensors.numpy import save

OUT = pathlib.Path(__file__).parent / "corpus" / "safetensors"

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "dtypes.safetensors").write_bytes(save({
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f16": np.ones((3,), dtype=np.float16),
        "i64": np.array([1, -2], dtype=np.int64),
        "u8": np.zeros((1, 1, 2), dtype=np.uint8),
        "scalar": np.array(1.5, dtype=np.float64),
        "empty": np.zeros((0, 4), dtype=np.int32),
    }, metadata={"format": "pt"}))
    (OUT / "layer.safetensors").write_bytes(save({
        "model.layers.0.self_attn.q_proj.weight": np.full((4, 4), 0.25, dtype=np.float32),
        "model.norm.weight": np.ones((4,), dtype=np.float32),
    }))
    print("wrote", sorted(p.name for p in OUT.iterdir()))
