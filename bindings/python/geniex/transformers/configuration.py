"""``GenerationConfig`` of the Transformers drop-in: Transformers' field names and defaults
(greedy unless ``do_sample``; ``max_length`` 20 with the prompt included)."""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Union

__all__ = ["GenerationConfig"]

_DEFAULTS: dict[str, Any] = {
    "max_length": 20,
    "max_new_tokens": None,
    "min_new_tokens": None,
    "do_sample": False,
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 1.0,
    "min_p": None,
    "repetition_penalty": 1.0,
    "eos_token_id": None,
    "bos_token_id": None,
    "pad_token_id": None,
    "stop_strings": None,
    "num_beams": 1,
    "num_return_sequences": 1,
    "output_scores": False,
    "output_logits": False,
    "return_dict_in_generate": False,
    "use_cache": True,
}


class GenerationConfig:
    """Generation settings by Transformers' names; unknown names are kept as attributes."""

    def __init__(self, **kwargs: Any) -> None:
        for k, v in _DEFAULTS.items():
            setattr(self, k, copy.copy(v))
        for k, v in kwargs.items():
            setattr(self, k, v)

    @classmethod
    def from_pretrained(cls, path: Union[str, os.PathLike], config_file_name: str = "generation_config.json",
                        **kwargs: Any) -> "GenerationConfig":
        """Reads a ``generation_config.json`` (a file or the folder holding it)."""
        p = os.fspath(path)
        if os.path.isdir(p):
            p = os.path.join(p, config_file_name)
        with open(p, encoding="utf-8") as f:
            data = json.load(f)
        data.update(kwargs)
        return cls(**data)

    def update(self, **kwargs: Any) -> dict[str, Any]:
        """Sets the given fields; returns the ones that are not generation fields."""
        unused = {}
        for k, v in kwargs.items():
            if hasattr(self, k):
                setattr(self, k, v)
            else:
                unused[k] = v
        return unused

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.__dict__.items() if _DEFAULTS.get(k, object()) != v}
        return f"GenerationConfig({json.dumps(changed, default=str)})"
