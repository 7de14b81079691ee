"""``AutoTokenizer`` and ``BatchEncoding`` of the Transformers drop-in, over a GGUF model's own
tokenizer and chat template (the engine's, byte-identical to llama.cpp's)."""

from __future__ import annotations

import os
from collections import UserDict
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import geniex

from ._resolve import resolve
from ._tensors import as_rows, to_return_type

__all__ = ["AutoTokenizer", "BatchEncoding", "GenieXTokenizer"]

# One tokenizer model per file: tokenizing needs the vocabulary, which comes with a loaded model
# (CPU, a small context: it never generates).
_TOKENIZER_MODELS: dict[str, geniex.Model] = {}


def _tokenizer_model(path: str) -> geniex.Model:
    m = _TOKENIZER_MODELS.get(path)
    if m is None or m.closed:
        m = geniex.load(path, device="cpu", n_ctx=256, n_threads=1, max_sequences=1)
        _TOKENIZER_MODELS[path] = m
    return m


class BatchEncoding(UserDict):
    """Transformers' ``BatchEncoding``: a dict of ``input_ids`` / ``attention_mask`` with
    attribute access and a no-op ``.to(device)``.

    As ``apply_chat_template(tokenize=True)``'s result it bridges Transformers 4.x (which returned
    the ids) and 5.x (a BatchEncoding): ``.shape``, ``len()``, iteration, int/slice indexing and
    ``.tolist()`` act on ``input_ids`` while ``keys()``, ``["input_ids"]`` and ``**encoding`` act
    on the dict.
    """

    def __init__(self, data: Optional[Mapping[str, Any]] = None, *, bridge: bool = False):
        super().__init__(data or {})
        self._bridge = bridge

    def __getattr__(self, item: str) -> Any:
        if item in ("data", "_bridge") or item.startswith("__"):
            raise AttributeError(item)
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item) from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.data[key]
        return self.data["input_ids"][key]

    def __iter__(self):
        return iter(self.data["input_ids"]) if self._bridge else iter(self.data)

    def __len__(self) -> int:
        return len(self.data["input_ids"]) if self._bridge else len(self.data)

    def keys(self):  # type: ignore[override]
        return self.data.keys()

    def items(self):  # type: ignore[override]
        return self.data.items()

    def values(self):  # type: ignore[override]
        return self.data.values()

    @property
    def shape(self):
        return getattr(self.data["input_ids"], "shape", None)

    def tolist(self) -> list:
        ids = self.data["input_ids"]
        return ids.tolist() if hasattr(ids, "tolist") else list(ids)

    def to(self, *args: Any, **kwargs: Any) -> "BatchEncoding":
        """Device moves are no-ops (tensors stay on the host; GenieX places the model)."""
        return self

    def __repr__(self) -> str:
        return f"BatchEncoding({self.data!r})"


def _is_batch_of_conversations(conversation: Any) -> bool:
    return (isinstance(conversation, (list, tuple)) and len(conversation) > 0
            and isinstance(conversation[0], (list, tuple)))


class GenieXTokenizer:
    """A Transformers-compatible tokenizer over a GGUF model (``AutoTokenizer``)."""

    padding_side = "left"
    truncation_side = "right"

    def __init__(self, model: geniex.Model, name_or_path: str = "") -> None:
        self._model = model
        self.name_or_path = name_or_path
        self._special: Optional[frozenset[int]] = None
        self._piece_ids: Optional[dict[str, int]] = None
        info = model.info
        self.vocab_size = info.n_vocab
        self.bos_token_id: Optional[int] = info.bos_token if info.bos_token >= 0 else None
        eog = model.end_of_generation_tokens()
        self.eos_token_id: Optional[int] = eog[0] if eog else None
        self.pad_token_id: Optional[int] = None
        for t in sorted(self.special_ids):
            if model.token_piece(t) in ("<pad>", "<|pad|>", "[PAD]", "<|finetune_right_pad_id|>"):
                self.pad_token_id = t
                break
        self.model_max_length = info.n_ctx_train

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        gguf_file: Optional[str] = None, **kwargs: Any) -> "GenieXTokenizer":
        """The tokenizer of a GGUF file, folder or mapped model id (never downloads)."""
        path = str(resolve(pretrained_model_name_or_path, gguf_file))
        return cls(_tokenizer_model(path), os.fspath(pretrained_model_name_or_path))

    # ---- special tokens --------------------------------------------------------------------
    @property
    def special_ids(self) -> frozenset[int]:
        if self._special is None:
            self._special = frozenset(self._model.special_tokens())
        return self._special

    @property
    def all_special_ids(self) -> list[int]:
        return sorted(self.special_ids)

    @property
    def all_special_tokens(self) -> list[str]:
        return [self._model.token_piece(t) for t in self.all_special_ids]

    def _piece(self, token: Optional[int]) -> Optional[str]:
        return None if token is None else self._model.token_piece(token)

    @property
    def bos_token(self) -> Optional[str]:
        return self._piece(self.bos_token_id)

    @property
    def eos_token(self) -> Optional[str]:
        return self._piece(self.eos_token_id)

    @property
    def pad_token(self) -> Optional[str]:
        return self._piece(self.pad_token_id)

    @property
    def chat_template(self) -> Optional[str]:
        """Where the template comes from ("file", "builtin:FAMILY"), None without one."""
        origin = self._model.info.chat_template_origin
        return origin or None

    def __len__(self) -> int:
        return self.vocab_size

    def convert_ids_to_tokens(self, ids: Union[int, Sequence[int]]) -> Union[str, list[str]]:
        if isinstance(ids, int):
            return self._model.token_piece(ids)
        return [self._model.token_piece(int(t)) for t in ids]

    def convert_tokens_to_ids(self, tokens: Union[str, Sequence[str]]) -> Union[int, list[int]]:
        if self._piece_ids is None:
            self._piece_ids = {}
            for t in range(self.vocab_size):
                self._piece_ids.setdefault(self._model.token_piece(t), t)
        if isinstance(tokens, str):
            return self._piece_ids.get(tokens, -1)
        return [self._piece_ids.get(t, -1) for t in tokens]

    # ---- encoding ----------------------------------------------------------------------------
    def _encode_rows(self, rows: list[list[int]], *, batched: bool, padding: Any,
                     truncation: Any, max_length: Optional[int], return_tensors: Optional[str],
                     return_attention_mask: Optional[bool]) -> BatchEncoding:
        if truncation and max_length is not None:
            rows = [r[:max_length] for r in rows]
        masks = [[1] * len(r) for r in rows]
        if padding in (True, "longest", "max_length"):
            width = max(len(r) for r in rows) if rows else 0
            if padding == "max_length" and max_length is not None:
                width = max(width, max_length)
            pad = self.pad_token_id if self.pad_token_id is not None else (self.eos_token_id or 0)
            for i, r in enumerate(rows):
                n = width - len(r)
                if self.padding_side == "left":
                    rows[i], masks[i] = [pad] * n + r, [0] * n + masks[i]
                else:
                    rows[i], masks[i] = r + [pad] * n, masks[i] + [0] * n
        if return_tensors is not None and len({len(r) for r in rows}) > 1:
            raise ValueError("Unable to create tensor, you should probably activate padding "
                             "with 'padding=True' to have batched tensors with the same length.")
        if return_tensors is None and not batched:
            data: dict[str, Any] = {"input_ids": rows[0], "attention_mask": masks[0]}
        else:
            data = {"input_ids": to_return_type(rows, return_tensors),
                    "attention_mask": to_return_type(masks, return_tensors)}
        if return_attention_mask is False:
            del data["attention_mask"]
        return BatchEncoding(data)

    def __call__(self, text: Union[str, Sequence[str]], *args: Any, add_special_tokens: bool = True,
                 padding: Any = False, truncation: Any = False, max_length: Optional[int] = None,
                 return_tensors: Optional[str] = None,
                 return_attention_mask: Optional[bool] = None, **kwargs: Any) -> BatchEncoding:
        """Tokenizes a string or a list of strings (special-token text is parsed, as in
        Transformers; BOS is added per ``add_special_tokens``)."""
        batched = not isinstance(text, str)
        texts = list(text) if batched else [text]
        rows = [self._model.tokenize(t, add_special=add_special_tokens, parse_special=True)
                for t in texts]
        return self._encode_rows(rows, batched=batched, padding=padding, truncation=truncation,
                                 max_length=max_length, return_tensors=return_tensors,
                                 return_attention_mask=return_attention_mask)

    def encode(self, text: str, *args: Any, add_special_tokens: bool = True,
               return_tensors: Optional[str] = None, truncation: Any = False,
               max_length: Optional[int] = None, **kwargs: Any):
        """Token ids of ``text``: a list, or a (1, n) tensor with ``return_tensors``."""
        ids = self._model.tokenize(text, add_special=add_special_tokens, parse_special=True)
        if truncation and max_length is not None:
            ids = ids[:max_length]
        return ids if return_tensors is None else to_return_type([ids], return_tensors)

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        """The token strings of ``text`` (no special tokens added)."""
        ids = self._model.tokenize(text, add_special=False, parse_special=True)
        return [self._model.token_piece(t) for t in ids]

    # ---- decoding ----------------------------------------------------------------------------
    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> str:
        """Text of the ids; special tokens spelled out unless ``skip_special_tokens``."""
        if isinstance(token_ids, int) or (hasattr(token_ids, "ndim") and token_ids.ndim == 0):
            token_ids = [int(token_ids)]
        rows = as_rows(token_ids)
        if len(rows) != 1:
            raise ValueError("decode() takes one sequence; use batch_decode() for several")
        special = self.special_ids
        out: list[str] = []
        run: list[int] = []
        for t in rows[0]:
            if t in special:
                if run:
                    out.append(self._model.detokenize(run))
                    run = []
                if not skip_special_tokens:
                    out.append(self._model.token_piece(t))
            else:
                run.append(t)
        if run:
            out.append(self._model.detokenize(run))
        return "".join(out)

    def batch_decode(self, sequences: Iterable[Any], skip_special_tokens: bool = False,
                     **kwargs: Any) -> list[str]:
        return [self.decode(s, skip_special_tokens=skip_special_tokens, **kwargs)
                for s in sequences]

    # ---- chat ----------------------------------------------------------------------------------
    def apply_chat_template(self, conversation: Any, tools: Any = None, documents: Any = None,
                            chat_template: Optional[str] = None,
                            add_generation_prompt: bool = False,
                            continue_final_message: bool = False, tokenize: bool = True,
                            padding: Any = False, truncation: bool = False,
                            max_length: Optional[int] = None,
                            return_tensors: Optional[str] = None,
                            return_dict: Optional[bool] = None, **template_kwargs: Any):
        """Renders conversations with the model's chat template (the GGUF's, else GenieX's
        built-in one for the family). ``tokenize=False``: the text. ``tokenize=True``: ids
        (special tokens parsed, none added), as a :class:`BatchEncoding` that also acts as the
        ids (Transformers 4.x and 5.x code both work) unless ``return_dict`` says which."""
        if chat_template is not None:
            raise NotImplementedError("apply_chat_template: chat_template= is not supported by "
                                      "GenieX yet (the model's own template is used)")
        if continue_final_message:
            raise NotImplementedError("apply_chat_template: continue_final_message=True is not "
                                      "supported by GenieX yet")
        if tools is not None:
            tools = list(tools)
            for t in tools:
                if not isinstance(t, dict):
                    raise TypeError("apply_chat_template: GenieX takes tools as JSON-schema "
                                    "dicts ({'type': 'function', 'function': {...}}), not "
                                    f"{type(t).__name__}")
        # Template variables go to the template as transformers passes them (enable_thinking,
        # documents, date_string, ...).
        extra = {k: v for k, v in template_kwargs.items() if k != "return_assistant_tokens_mask"}
        if documents is not None:
            extra["documents"] = documents
        batched = _is_batch_of_conversations(conversation)
        convs = list(conversation) if batched else [conversation]
        texts = [self._model.apply_chat_template(c, add_generation_prompt=add_generation_prompt,
                                                 tools=tools, extra_context=extra or None)
                 for c in convs]
        if not tokenize:
            return texts if batched else texts[0]
        rows = [self._model.tokenize(t, add_special=False, parse_special=True) for t in texts]
        enc = self._encode_rows(rows, batched=batched, padding=padding, truncation=truncation,
                                max_length=max_length, return_tensors=return_tensors,
                                return_attention_mask=None)
        if return_dict is False:
            return enc["input_ids"]
        if return_dict is None:
            enc._bridge = True
        return enc


class AutoTokenizer:
    """``AutoTokenizer.from_pretrained(path_or_id)``: a :class:`GenieXTokenizer`."""

    def __init__(self) -> None:
        raise EnvironmentError("AutoTokenizer is created with AutoTokenizer.from_pretrained(...)")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        **kwargs: Any) -> GenieXTokenizer:
        return GenieXTokenizer.from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
