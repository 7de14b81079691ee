"""GenieX: run GGUF language models on the device, from Python.

Native API (mirrors the C++ API, raises instead of returning a status)::

    import geniex

    with geniex.load("gemma-3-270m-q4_k_m.gguf", device="cpu") as model:
        out = model.generate("The capital of France is", max_tokens=16, temperature=0)
        print(out.text, out.stop_reason, out.timings.generation_tokens_per_second)
        for piece in model.stream("Once upon a time", max_tokens=32):
            print(piece.text, end="", flush=True)

Every blocking call releases the GIL; concurrent calls from Python threads are batched by the
engine. Ctrl-C stops a generation (prefill included) and raises KeyboardInterrupt; an exception
raised in an ``on_token`` callback stops the generation and propagates. Errors are
:class:`GenieXError` subclasses (see :mod:`geniex.errors`).
"""

from __future__ import annotations

import atexit as _atexit
import os as _os
from typing import Optional, Union

from . import errors
from ._core import (
    CancelToken,
    Device,
    EngineStats,
    Generation,
    GenerationConfig,
    KvStats,
    Model,
    ModelBuilder,
    ModelInfo,
    Piece,
    Timings,
    TokenLogprob,
    TokenLogprobs,
    TokenStream,
)
from ._core import _set_default_plugin_dir, _shutdown
from .errors import (
    ContextFull,
    CorruptFile,
    DataLoss,
    GenieXError,
    InternalError,
    InvalidArgument,
    IoError,
    ModelNotFound,
    NotFound,
    OutOfMemory,
    OutOfRange,
    ResourceExhausted,
    Unimplemented,
)

__version__ = "0.1.0"

__all__ = [
    "load",
    "CancelToken",
    "Device",
    "EngineStats",
    "Generation",
    "GenerationConfig",
    "KvStats",
    "Model",
    "ModelBuilder",
    "ModelInfo",
    "Piece",
    "Timings",
    "TokenLogprob",
    "TokenLogprobs",
    "TokenStream",
    "errors",
    *(name for name in errors.__all__ if name != "from_status"),
]

# NPU plugins shipped in the wheel live in geniex/plugins; ModelBuilder uses that folder unless
# with_plugin_dir() says otherwise.
_PLUGINS = _os.path.join(_os.path.dirname(__file__), "plugins")
if _os.path.isdir(_PLUGINS):
    _set_default_plugin_dir(_PLUGINS)

# Generations run on native threads: cancel them and wait before the interpreter tears down.
_atexit.register(_shutdown)

PathLike = Union[str, "_os.PathLike[str]"]


def load(
    path: PathLike,
    *,
    device: Union[str, Device] = "auto",
    offload_layers: int = -1,
    n_ctx: int = 4096,
    n_threads: int = 0,
    n_batch: int = 512,
    kv_cache_type: str = "f16",
    kv_budget: int = 0,
    spill_dir: Optional[PathLike] = None,
    max_sequences: int = 4,
    context_overflow: str = "stop",
    n_keep: int = 0,
    mmproj: Optional[PathLike] = None,
    plugin_dir: Optional[PathLike] = None,
    npu_config: str = "",
    deterministic: bool = False,
) -> Model:
    """Loads a GGUF model: ``ModelBuilder`` with these settings, then ``build()``.

    Raises ModelNotFound (a missing file), DataLoss (a corrupt file), InvalidArgument (a bad
    setting), Unimplemented (an architecture or weight type this build does not run).
    """
    b = (
        ModelBuilder(path)
        .with_device(device)
        .with_offload_layers(offload_layers)
        .with_context_size(n_ctx)
        .with_threads(n_threads)
        .with_batch_size(n_batch)
        .with_kv_cache_type(kv_cache_type)
        .with_kv_budget(kv_budget, _os.fspath(spill_dir) if spill_dir is not None else "")
        .with_max_sequences(max_sequences)
        .with_context_overflow(context_overflow, n_keep)
        .with_deterministic(deterministic)
    )
    if mmproj is not None:
        b.with_mmproj(mmproj)
    if plugin_dir is not None:
        b.with_plugin_dir(plugin_dir)
    if npu_config:
        b.with_npu_config(npu_config)
    return b.build()
