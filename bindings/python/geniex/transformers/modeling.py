"""``AutoModelForCausalLM`` of the Transformers drop-in: ``generate()`` with Transformers'
arguments and return value (prompt + new ids, in the input's tensor type) on the GenieX engine."""

from __future__ import annotations

import copy
import os
import threading
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, Optional, Union

import numpy as np

import geniex

from ._resolve import find_mmproj, resolve
from ._tensors import as_rows, kind_of, to_return_type
from .configuration import GenerationConfig
from .streamers import TextStreamer

__all__ = ["AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForVision2Seq",
           "CausalLMOutput", "GenieXForCausalLM", "GenieXForImageTextToText"]

# What Transformers' image processors add beside pixel_values; the engine preprocesses the images
# itself, so generate() takes and drops them.
_IMAGE_EXTRAS = ("pixel_attention_mask", "spatial_shapes", "image_sizes", "image_grid_thw",
                 "image_attention_mask", "aspect_ratio_ids", "aspect_ratio_mask")

_UNSUPPORTED = {
    "num_beams": lambda v: v not in (None, 1),
    "num_return_sequences": lambda v: v not in (None, 1),
    "output_scores": bool,
    "output_logits": bool,
    "return_dict_in_generate": bool,
    "assistant_model": lambda v: v is not None,
}


def _device_of(device_map: Any) -> str:
    """Transformers' device_map -> a GenieX device name."""
    if device_map is None or isinstance(device_map, dict):
        return "auto"
    if isinstance(device_map, int):
        return "gpu"
    d = str(device_map).lower()
    if d in ("auto", "cpu", "gpu", "npu"):
        return d
    if d.startswith("cuda") or d in ("mps", "xpu", "balanced", "sequential"):
        return "gpu" if d.startswith("cuda") or d in ("mps", "xpu") else "auto"
    raise ValueError(f"device_map {device_map!r}: use 'auto', 'cpu', 'gpu' (or 'cuda'), 'npu'")


class CausalLMOutput(SimpleNamespace):
    """``model(input_ids)``'s result: ``logits`` of shape (batch, n, vocab)."""


def _eos_set(value: Any) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, (int, np.integer)):
        return {int(value)}
    return {int(v) for v in value}


class GenieXForCausalLM:
    """A GGUF language model with Transformers' ``generate()`` and ``__call__``."""

    def __init__(self, model: geniex.Model, name_or_path: str, device: str) -> None:
        self._model = model
        self.name_or_path = name_or_path
        self._device_name = device
        info = model.info
        self.config = SimpleNamespace(model_type=info.architecture, vocab_size=info.n_vocab,
                                      max_position_embeddings=info.n_ctx_train,
                                      hidden_size=info.n_embd, num_hidden_layers=info.n_layer,
                                      name_or_path=name_or_path)
        eog = model.end_of_generation_tokens()
        self.generation_config = GenerationConfig(
            eos_token_id=eog[0] if len(eog) == 1 else (eog or None),
            bos_token_id=info.bos_token if info.bos_token >= 0 else None)
        beside = Path(info.path).parent / "generation_config.json"
        if beside.is_file():
            loaded = GenerationConfig.from_pretrained(beside)
            self.generation_config.update(**loaded.to_dict())

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        gguf_file: Optional[str] = None, device_map: Any = None,
                        dtype: Any = None, torch_dtype: Any = None, n_ctx: Optional[int] = None,
                        n_threads: Optional[int] = None, offload_layers: int = -1,
                        **kwargs: Any) -> "GenieXForCausalLM":
        """Loads a GGUF file, folder or mapped model id (never downloads). ``device_map``:
        "auto", "cpu", "gpu"/"cuda"/"mps"/an index, "npu". ``offload_layers``: the last N
        decoder layers (and the output head) on that device, the rest on the CPU (-1: no limit).
        Dtype arguments are ignored (the file's weight types are used)."""
        for name, value in (("dtype", dtype), ("torch_dtype", torch_dtype)):
            if value not in (None, "auto"):
                warnings.warn(f"{name}={value!r} is ignored: GenieX runs the GGUF file's weight "
                              "types", stacklevel=2)
        path = resolve(pretrained_model_name_or_path, gguf_file)
        device = _device_of(device_map)
        model = geniex.load(path, device=device, n_ctx=n_ctx or 4096, n_threads=n_threads or 0,
                            offload_layers=offload_layers)
        return cls(model, os.fspath(pretrained_model_name_or_path), device)

    # ---- torch-style no-ops --------------------------------------------------------------------
    @property
    def device(self) -> str:
        """Inputs stay on the host: tensors' ``.to(model.device)`` is always valid."""
        return "cpu"

    def to(self, *args: Any, **kwargs: Any) -> "GenieXForCausalLM":
        return self

    def eval(self) -> "GenieXForCausalLM":
        return self

    def cpu(self) -> "GenieXForCausalLM":
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> "GenieXForCausalLM":
        return self

    def train(self, mode: bool = True) -> "GenieXForCausalLM":
        return self

    @property
    def native(self) -> geniex.Model:
        """The underlying :class:`geniex.Model`."""
        return self._model

    # ---- forward ---------------------------------------------------------------------------------
    def __call__(self, input_ids: Any = None, attention_mask: Any = None,
                 **kwargs: Any) -> CausalLMOutput:
        """Logits of every position, from an empty context: (batch, n, vocab) float32."""
        if isinstance(input_ids, Mapping):
            input_ids = input_ids["input_ids"]
        rows = as_rows(input_ids)
        out = np.stack([self._model.logits(r) for r in rows])
        if kind_of(input_ids) == "pt":
            try:
                import torch  # noqa: PLC0415

                if isinstance(input_ids, torch.Tensor):
                    return CausalLMOutput(logits=torch.from_numpy(out))
            except ImportError:
                pass
        return CausalLMOutput(logits=out)

    forward = __call__

    # ---- generate --------------------------------------------------------------------------------
    def _config_for(self, gc: GenerationConfig, prompt_len: int) -> geniex.GenerationConfig:
        c = geniex.GenerationConfig()
        if gc.max_new_tokens is not None:
            c.max_tokens = int(gc.max_new_tokens)
        else:
            c.max_tokens = max(0, int(gc.max_length) - prompt_len)
        if gc.do_sample:
            c.temperature = float(gc.temperature if gc.temperature is not None else 1.0)
            c.top_k = int(gc.top_k or 0)
            c.top_p = float(gc.top_p if gc.top_p is not None else 1.0)
            c.min_p = float(gc.min_p or 0.0)
        else:
            c.temperature = 0.0
        if gc.repetition_penalty not in (None, 1.0):
            c.repetition_penalty = float(gc.repetition_penalty)
            c.penalty_last_n = -1  # Transformers penalizes the whole context
        if gc.stop_strings:
            c.stop = [gc.stop_strings] if isinstance(gc.stop_strings, str) else list(gc.stop_strings)
        return c

    def generate(self, inputs: Any = None, generation_config: Optional[GenerationConfig] = None,
                 streamer: Any = None, **kwargs: Any):
        """Transformers' ``generate``: ids (or a BatchEncoding / ``**inputs``) in, prompt + new
        ids out in the input's type, rows right-padded with the pad id. Greedy unless
        ``do_sample=True``; rows of a batch run concurrently (the engine batches them)."""
        input_ids = kwargs.pop("input_ids", None)
        attention_mask = kwargs.pop("attention_mask", None)
        pixel_values = kwargs.pop("pixel_values", None)
        for extra in _IMAGE_EXTRAS:
            kwargs.pop(extra, None)
        if isinstance(inputs, Mapping):
            if attention_mask is None:
                attention_mask = inputs.get("attention_mask")
            if pixel_values is None:
                pixel_values = inputs.get("pixel_values")
            inputs = inputs["input_ids"]
        if inputs is None:
            inputs = input_ids
        if inputs is None:
            raise ValueError("generate() needs input ids (inputs=, input_ids= or **tokenizer(...))")
        gc = copy.deepcopy(generation_config or self.generation_config)
        for k, v in kwargs.items():
            setattr(gc, k, v)
        gc._no_eos = "eos_token_id" in kwargs and not _eos_set(kwargs["eos_token_id"])
        for name, bad in _UNSUPPORTED.items():
            if bad(getattr(gc, name, None)):
                raise NotImplementedError(f"generate({name}={getattr(gc, name)!r}) is not "
                                          "supported by GenieX")
        if not gc.do_sample and any(k in kwargs for k in ("temperature", "top_k", "top_p", "min_p")):
            warnings.warn("do_sample is False: temperature/top_k/top_p/min_p are ignored "
                          "(greedy decoding)", stacklevel=2)
        kind = kind_of(inputs)
        rows = as_rows(inputs)
        masks = as_rows(attention_mask) if attention_mask is not None else None
        if streamer is not None and len(rows) != 1:
            raise ValueError("`streamer` works with a batch size of 1 only")
        eos = _eos_set(gc.eos_token_id)
        pad = gc.pad_token_id
        if pad is None:
            pad = min(eos) if eos else 0
        prompts = []
        for i, row in enumerate(rows):
            if masks is not None:
                row = [t for t, m in zip(row, masks[i]) if m]
            prompts.append(row)
        images = self._images_of(pixel_values, len(rows))
        results: list[Optional[list[int]]] = [None] * len(rows)
        errors: list[BaseException] = []

        def one(i: int) -> list[int]:
            return self._generate_row(prompts[i], gc, eos, streamer, images[i], pixel_values, i)

        def run(i: int) -> None:
            try:
                results[i] = one(i)
            except BaseException as e:  # re-raised on the caller's thread
                errors.append(e)

        if len(rows) == 1:
            results[0] = one(0)
        else:
            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(rows))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
        out = [rows[i] + (results[i] or []) for i in range(len(rows))]
        width = max(len(r) for r in out)
        out = [r + [pad] * (width - len(r)) for r in out]
        return to_return_type(out, kind) if kind else out

    def _images_of(self, pixel_values: Any, n_rows: int) -> list[list[Any]]:
        """The images of each row from ``pixel_values`` (the processor's ImageInputs)."""
        if pixel_values is None:
            return [[] for _ in range(n_rows)]
        rows = getattr(pixel_values, "rows", None)
        if rows is None:
            raise TypeError("pixel_values must come from geniex.transformers' AutoProcessor (the "
                            "engine preprocesses images itself; pixel tensors are not taken)")
        if len(rows) != n_rows:
            raise ValueError(f"pixel_values holds images for {len(rows)} rows, input_ids has "
                             f"{n_rows}")
        if any(rows) and not self._model.info.image_marker:
            raise ValueError(f"{self.name_or_path}: images need a vision-language model loaded "
                             "with its mmproj (AutoModelForImageTextToText.from_pretrained(..., "
                             "mmproj=PATH) or an mmproj-*.gguf beside the model)")
        return [list(r) for r in rows]

    def _prompt_text(self, prompt: list[int], pixel_values: Any, row: int) -> str:
        """The text the engine reads for an image prompt: the processor's own text when the ids
        are unchanged, else the ids spelled out (special tokens as their text)."""
        text = pixel_values.text_for(row, prompt) if pixel_values is not None else None
        if text is not None:
            return text
        return "".join(self._model.token_piece(t) for t in prompt)

    def _generate_row(self, prompt: list[int], gc: GenerationConfig, eos: set[int],
                      streamer: Any, images: Optional[list[Any]] = None,
                      pixel_values: Any = None, row: int = 0) -> list[int]:
        config = self._config_for(gc, len(prompt))
        # generate(eos_token_id=None): as in Transformers, nothing ends the generation but
        # max_new_tokens (and stop strings), not even the model's end-of-generation tokens.
        config.ignore_eos = bool(getattr(gc, "_no_eos", False))
        cancel = geniex.CancelToken()
        ours = isinstance(streamer, TextStreamer)
        if ours:
            streamer._begin(prompt, cancel)
        elif streamer is not None:
            streamer.put(to_return_type([prompt], "np"))

        def on_token(text: str, token: int) -> bool:
            if ours:
                streamer._text(text)
            return token not in eos

        try:
            if images:
                # The engine tokenizes the prompt's text itself (special tokens parsed, nothing
                # added: the ids already hold BOS) and puts image i at the i-th image token.
                config.parse_special = True
                config.add_special = False
                out = self._model.generate(self._prompt_text(prompt, pixel_values, row), config,
                                           on_token=on_token, cancel=cancel, images=images)
            else:
                out = self._model.generate(prompt, config, on_token=on_token, cancel=cancel)
        finally:
            if ours:
                streamer.end()
        tokens = list(out.tokens)
        if streamer is not None and not ours:
            for t in tokens:
                streamer.put(np.asarray([t], dtype=np.int64))
            streamer.end()
        return tokens


class AutoModelForCausalLM:
    """``AutoModelForCausalLM.from_pretrained(path_or_id, device_map=...)``."""

    def __init__(self) -> None:
        raise EnvironmentError("AutoModelForCausalLM is created with "
                               "AutoModelForCausalLM.from_pretrained(...)")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        **kwargs: Any) -> GenieXForCausalLM:
        return GenieXForCausalLM.from_pretrained(pretrained_model_name_or_path, *args, **kwargs)


class GenieXForImageTextToText(GenieXForCausalLM):
    """A vision-language GGUF model (with its mmproj vision encoder): ``generate(**inputs)``
    takes the processor's ``pixel_values`` (the images) beside ``input_ids``."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        gguf_file: Optional[str] = None, device_map: Any = None,
                        dtype: Any = None, torch_dtype: Any = None, n_ctx: Optional[int] = None,
                        n_threads: Optional[int] = None, offload_layers: int = -1,
                        mmproj: Optional[Union[str, os.PathLike]] = None,
                        **kwargs: Any) -> "GenieXForImageTextToText":
        """Loads a GGUF file, folder or mapped model id with its vision encoder: ``mmproj=``,
        the one mapped with the id, or an ``mmproj-*.gguf`` beside the model (see
        :func:`geniex.transformers.find_mmproj`). Without one, a text-only model loads and
        ``generate`` refuses images."""
        for name, value in (("dtype", dtype), ("torch_dtype", torch_dtype)):
            if value not in (None, "auto"):
                warnings.warn(f"{name}={value!r} is ignored: GenieX runs the GGUF file's weight "
                              "types", stacklevel=3)
        path = resolve(pretrained_model_name_or_path, gguf_file)
        proj = find_mmproj(pretrained_model_name_or_path, path, mmproj)
        device = _device_of(device_map)
        model = geniex.load(path, device=device, n_ctx=n_ctx or 4096, n_threads=n_threads or 0,
                            mmproj=proj, offload_layers=offload_layers)
        return cls(model, os.fspath(pretrained_model_name_or_path), device)


class AutoModelForImageTextToText:
    """``AutoModelForImageTextToText.from_pretrained(path_or_id, device_map=...)``."""

    def __init__(self) -> None:
        raise EnvironmentError(f"{type(self).__name__} is created with "
                               f"{type(self).__name__}.from_pretrained(...)")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        **kwargs: Any) -> GenieXForImageTextToText:
        return GenieXForImageTextToText.from_pretrained(pretrained_model_name_or_path, *args,
                                                        **kwargs)


class AutoModelForVision2Seq(AutoModelForImageTextToText):
    """Transformers 4.x's name of :class:`AutoModelForImageTextToText`."""
