"""GenieX native core (private: use the geniex package)"""

from collections.abc import Callable, Mapping, Sequence
import os
from typing import Any, overload

import numpy
import numpy.typing


class Device:
    """Where a model runs: auto, cpu, gpu or npu."""

    @staticmethod
    def automatic() -> Device:
        """NPU, then GPU, then CPU (the default)."""

    @staticmethod
    def cpu() -> Device: ...

    @staticmethod
    def gpu() -> Device: ...

    @staticmethod
    def npu() -> Device: ...

    @staticmethod
    def parse(name: str) -> Device:
        """"auto", "cpu", "gpu" or "npu"; anything else raises InvalidArgument."""

    @property
    def name(self) -> str: ...

    def __eq__(self, arg: Device, /) -> bool: ...

    def __repr__(self) -> str: ...

class CancelToken:
    """
    Cancels a generation from any thread: pass it as `cancel=` and call cancel(). Checked per prefill chunk and per token; once cancelled it stays cancelled.
    """

    def __init__(self) -> None: ...

    def cancel(self) -> None: ...

    @property
    def cancelled(self) -> bool: ...

class GenerationConfig:
    """
    Sampling and stopping for one generation (llama.cpp's defaults). GenerationConfig(max_tokens=64, temperature=0) sets fields by name; temperature 0 is greedy.
    """

    @overload
    def __init__(self, **fields) -> None:
        """The defaults, with the given fields set."""

    @overload
    def __init__(self, other: GenerationConfig) -> None:
        """A copy of `other`."""

    @property
    def max_tokens(self) -> int:
        """Most tokens to generate (>= 0)."""

    @max_tokens.setter
    def max_tokens(self, arg: int, /) -> None: ...

    @property
    def temperature(self) -> float:
        """0 = greedy."""

    @temperature.setter
    def temperature(self, arg: float, /) -> None: ...

    @property
    def top_k(self) -> int:
        """0 = off."""

    @top_k.setter
    def top_k(self, arg: int, /) -> None: ...

    @property
    def top_p(self) -> float:
        """1 = off."""

    @top_p.setter
    def top_p(self, arg: float, /) -> None: ...

    @property
    def min_p(self) -> float:
        """0 = off."""

    @min_p.setter
    def min_p(self, arg: float, /) -> None: ...

    @property
    def repetition_penalty(self) -> float:
        """1 = off."""

    @repetition_penalty.setter
    def repetition_penalty(self, arg: float, /) -> None: ...

    @property
    def presence_penalty(self) -> float:
        """0 = off."""

    @presence_penalty.setter
    def presence_penalty(self, arg: float, /) -> None: ...

    @property
    def frequency_penalty(self) -> float:
        """0 = off."""

    @frequency_penalty.setter
    def frequency_penalty(self, arg: float, /) -> None: ...

    @property
    def penalty_last_n(self) -> int:
        """Window of the penalties; -1 = the whole context."""

    @penalty_last_n.setter
    def penalty_last_n(self, arg: int, /) -> None: ...

    @property
    def seed(self) -> int | None:
        """Sampler seed; None = a fresh one per call."""

    @seed.setter
    def seed(self, arg: int | None, /) -> None: ...

    @property
    def stop(self) -> list[str]:
        """Generation stops before the first of these strings."""

    @stop.setter
    def stop(self, arg: Sequence[str], /) -> None: ...

    @property
    def ignore_eos(self) -> bool:
        """Keep going after end-of-generation tokens."""

    @ignore_eos.setter
    def ignore_eos(self, arg: bool, /) -> None: ...

    @property
    def parse_special(self) -> bool:
        """Text prompts: turn special-token text into the special tokens."""

    @parse_special.setter
    def parse_special(self, arg: bool, /) -> None: ...

    @property
    def add_special(self) -> bool:
        """Text prompts: add BOS and other automatic specials."""

    @add_special.setter
    def add_special(self, arg: bool, /) -> None: ...

    @property
    def logprobs(self) -> int:
        """-1 = off; k >= 0: each token's log-probability and the k most likely."""

    @logprobs.setter
    def logprobs(self, arg: int, /) -> None: ...

    @property
    def json_schema(self) -> str:
        """
        Structured output: a JSON Schema (JSON text) the reply must satisfy; sampling is constrained so the reply always validates. An unsupported keyword raises InvalidArgument naming it. '' = off.
        """

    @json_schema.setter
    def json_schema(self, arg: str, /) -> None: ...

    def __repr__(self) -> str: ...

class Timings:
    """Speed of one generation."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def cached_tokens(self) -> int: ...

    @property
    def generated_tokens(self) -> int: ...

    @property
    def prompt_ms(self) -> float: ...

    @property
    def generation_ms(self) -> float: ...

    @property
    def ttft_ms(self) -> float: ...

    @property
    def prompt_tokens_per_second(self) -> float: ...

    @property
    def generation_tokens_per_second(self) -> float: ...

class TokenLogprob:
    @property
    def token(self) -> int: ...

    @property
    def logprob(self) -> float: ...

class TokenLogprobs:
    @property
    def chosen(self) -> TokenLogprob: ...

    @property
    def top(self) -> list[TokenLogprob]: ...

class Generation:
    """The result of generate() / chat()."""

    @property
    def text(self) -> str:
        """Generated text (no stop string, no end-of-generation token text)."""

    @property
    def prompt_tokens(self) -> list[int]:
        """What the model was fed."""

    @property
    def tokens(self) -> list[int]:
        """Generated ids (with a final EOG token if any)."""

    @property
    def logprobs(self) -> list[TokenLogprobs]: ...

    @property
    def stop_reason(self) -> str:
        """"eog", "length", "stop", "cancelled" or "context_full"."""

    @property
    def timings(self) -> Timings: ...

    @property
    def seed(self) -> int:
        """The sampler's seed (repeatable)."""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class Piece:
    """One piece of streamed text and the token that completed it."""

    @property
    def text(self) -> str: ...

    @property
    def token(self) -> int: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class ModelInfo:
    """Facts about a loaded model."""

    @property
    def path(self) -> str: ...

    @property
    def architecture(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def n_params(self) -> int: ...

    @property
    def file_bytes(self) -> int: ...

    @property
    def n_layer(self) -> int: ...

    @property
    def n_embd(self) -> int: ...

    @property
    def n_vocab(self) -> int: ...

    @property
    def n_ctx_train(self) -> int: ...

    @property
    def n_ctx(self) -> int: ...

    @property
    def n_threads(self) -> int: ...

    @property
    def bos_token(self) -> int: ...

    @property
    def add_bos(self) -> bool: ...

    @property
    def chat_template_origin(self) -> str: ...

    @property
    def warnings(self) -> list[str]: ...

    @property
    def placement(self) -> str: ...

    @property
    def mmproj_path(self) -> str: ...

    @property
    def image_marker(self) -> str: ...

class KvStats:
    """The KV cache's memory."""

    @property
    def bytes_per_token(self) -> int: ...

    @property
    def blocks_in_use(self) -> int: ...

    @property
    def blocks_cached(self) -> int: ...

    @property
    def bytes_resident(self) -> int: ...

    @property
    def bytes_spilled(self) -> int: ...

    @property
    def prefix_hits(self) -> int: ...

    @property
    def cached_tokens(self) -> int: ...

    @property
    def snapshot_bytes(self) -> int: ...

class EngineStats:
    """The batching engine's counters."""

    @property
    def steps(self) -> int: ...

    @property
    def batched_tokens(self) -> int: ...

    @property
    def active(self) -> int: ...

    @property
    def queued(self) -> int: ...

    @property
    def fallbacks(self) -> int: ...

    @property
    def boundary_bytes(self) -> int: ...

class ModelBuilder:
    """
    Configures and loads a Model: ModelBuilder(path).with_device('cpu').build().
    """

    def __init__(self, path: str | os.PathLike) -> None:
        """The model's GGUF file."""

    def with_device(self, device: Device | str) -> ModelBuilder:
        """A Device or 'auto', 'cpu', 'gpu', 'npu'."""

    def with_offload_layers(self, n: int) -> ModelBuilder:
        """
        Decoder layers on the device's accelerator: the last n (and the output head when n >= 1), the rest on the CPU; 0 = all on the CPU; -1 (default) = no limit.
        """

    def with_context_size(self, n_ctx: int) -> ModelBuilder:
        """
        Context window in tokens (default 4096; 0 = the model's training context).
        """

    def with_threads(self, n_threads: int) -> ModelBuilder:
        """Worker threads (default 0: the CPUs this process may use)."""

    def with_batch_size(self, n_batch: int) -> ModelBuilder:
        """Most prompt tokens evaluated in one step (default 512)."""

    def with_kv_cache_type(self, kv_cache_type: str) -> ModelBuilder:
        """'f16' (default), 'f32', 'q8_0' or 'q4_0'."""

    def with_kv_budget(self, bytes: int, spill_dir: str = "") -> ModelBuilder:
        """
        Most KV bytes in memory (0: no limit); beyond it blocks spill to `spill_dir`.
        """

    def with_max_sequences(self, n: int) -> ModelBuilder:
        """
        Sequences generating at once (default 4); concurrent calls are batched.
        """

    def with_context_overflow(self, policy: str, n_keep: int = 0) -> ModelBuilder:
        """'stop' (default) or 'shift' (keep n_keep tokens)."""

    def with_plugin_dir(self, dir: str | os.PathLike[str]) -> ModelBuilder:
        """Folder of NPU plugins (default: the package's plugins folder)."""

    def with_npu_config(self, config: str) -> ModelBuilder:
        """'key=value;...' handed to every NPU plugin."""

    def with_deterministic(self, on: bool = True) -> ModelBuilder:
        """Bit-identical output alone or batched (slower for some weight types)."""

    def with_mmproj(self, path: str | os.PathLike[str]) -> ModelBuilder:
        """The mmproj GGUF that makes this a vision-language model."""

    def build(self) -> Model:
        """
        Loads the model (GIL released). Raises ModelNotFound, DataLoss, InvalidArgument, ...
        """

class TokenStream:
    """
    Iterator of Piece(text, token) as the model generates; cancel() stops it, result is the Generation (after the last piece).
    """

    def __iter__(self) -> TokenStream: ...

    def __next__(self) -> Piece: ...

    def cancel(self) -> None:
        """Stops the generation at its next step."""

    @property
    def result(self) -> Generation:
        """The Generation; waits for the end (draining pieces not yet read)."""

    def __enter__(self) -> TokenStream: ...

    def __exit__(self, *args) -> None:
        """Cancels the generation if it still runs."""

class Model:
    """
    A loaded model. Thread-safe: concurrent generate() calls from Python threads are batched by the engine.
    """

    def generate(self, prompt: str | Sequence[int], config: GenerationConfig | None = None, *, on_token: Callable[[str, int], bool | None] | None = None, cancel: CancelToken | None = None, images: Sequence[str | os.PathLike[str] | bytes] | None = None, **overrides: Any) -> Generation:
        """
        Completes a text prompt (raw, no chat template) or a list of token ids. on_token(text, token) sees each piece; returning False stops (None goes on). Keyword overrides set GenerationConfig fields.
        """

    def chat(self, messages: Sequence[Mapping[str, Any]], config: GenerationConfig | None = None, *, on_token: Callable[[str, int], bool | None] | None = None, cancel: CancelToken | None = None, **overrides: Any) -> Generation:
        """
        Applies the chat template to messages ([{'role': 'user', 'content': ...}]) and generates the reply.
        """

    def stream(self, prompt_or_messages: str | Sequence[int] | Sequence[Mapping[str, Any]], config: GenerationConfig | None = None, *, cancel: CancelToken | None = None, **overrides: Any) -> TokenStream:
        """
        Like generate() (a str or token ids) or chat() (messages), as an iterator of pieces.
        """

    def apply_chat_template(self, messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool = True, *, tools: Sequence[Mapping[str, Any]] | None = None, extra_context: Mapping[str, Any] | None = None) -> str:
        """
        The chat template's rendering; tools (a list of JSON-schema tool dicts) and extra_context (more template variables, e.g. {'enable_thinking': False, 'documents': [...]}) as transformers passes them.
        """

    def chat_tokens(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """The ids chat() feeds the model for messages."""

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]: ...

    def detokenize(self, tokens: Sequence[int]) -> str: ...

    def token_piece(self, token: int) -> str:
        """One token's text, special tokens spelled out; '' for an unknown id."""

    def is_end_of_generation(self, token: int) -> bool: ...

    def logits(self, tokens: Sequence[int], first_row: int = 0) -> numpy.typing.NDArray[numpy.float32]:
        """
        float32 array (rows, n_vocab): logits of positions first_row.. from an empty context.
        """

    def reset(self) -> None:
        """Forgets the cached context."""

    def save_state(self, path: str | os.PathLike) -> None:
        """Writes the cached context (tokens and KV) to path."""

    def load_state(self, path: str | os.PathLike) -> None:
        """Replaces the cached context with a saved one."""

    def special_tokens(self) -> list[int]:
        """
        Ids of the special (control) tokens: spelled out by token_piece(), no text when detokenized (BOS, EOS, turn markers). Scans the vocabulary.
        """

    def end_of_generation_tokens(self) -> list[int]:
        """Ids of the tokens that end generation (EOS, end-of-turn, ...)."""

    def cached_tokens(self) -> list[int]: ...

    def kv_stats(self) -> KvStats: ...

    def engine_stats(self) -> EngineStats: ...

    def explain_placement(self) -> str: ...

    @property
    def info(self) -> ModelInfo:
        """Facts about the model."""

    @property
    def closed(self) -> bool: ...

    def close(self) -> None:
        """
        Releases the model (a generation still running keeps it until it ends).
        """

    def __enter__(self) -> Model: ...

    def __exit__(self, *args) -> None: ...
