"""``TextStreamer`` and ``TextIteratorStreamer`` of the Transformers drop-in. ``generate()``
feeds them the engine's text pieces as they become final (no re-decoding of ids); the prompt's
text comes first unless ``skip_prompt``."""

from __future__ import annotations

import queue
import threading
from typing import Any, Optional, Sequence

import geniex

__all__ = ["BaseStreamer", "TextStreamer", "TextIteratorStreamer"]


class BaseStreamer:
    """Transformers' streamer interface (``put(ids)``, ``end()``): other streamers written for
    Transformers receive the prompt ids, then each generated id, then ``end()``."""

    def put(self, value: Any) -> None:
        raise NotImplementedError

    def end(self) -> None:
        raise NotImplementedError


class TextStreamer(BaseStreamer):
    """Prints text to stdout as it is generated (Transformers' ``TextStreamer``)."""

    def __init__(self, tokenizer: Any, skip_prompt: bool = False, **decode_kwargs: Any) -> None:
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.decode_kwargs = decode_kwargs
        self._cancel: Optional[geniex.CancelToken] = None
        self._lock = threading.Lock()

    # ---- what geniex.transformers' generate() calls ------------------------------------------
    def _begin(self, prompt_ids: Sequence[int], cancel: geniex.CancelToken) -> None:
        with self._lock:
            self._cancel = cancel
        if not self.skip_prompt:
            self.on_finalized_text(self.tokenizer.decode(list(prompt_ids), **self.decode_kwargs))

    def _text(self, piece: str) -> None:
        self.on_finalized_text(piece)

    # ---- Transformers' interface ---------------------------------------------------------------
    def put(self, value: Any) -> None:
        """Ids from a caller that drives the streamer itself: decoded and passed on."""
        ids = value.tolist() if hasattr(value, "tolist") else list(value)
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        self.on_finalized_text(self.tokenizer.decode(ids, **self.decode_kwargs))

    def end(self) -> None:
        self.on_finalized_text("", stream_end=True)

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        print(text, flush=True, end="" if not stream_end else None)

    def cancel(self) -> None:
        """Stops the generation this streamer is attached to (at its next step)."""
        with self._lock:
            if self._cancel is not None:
                self._cancel.cancel()


class TextIteratorStreamer(TextStreamer):
    """Text as an iterator, for a ``generate()`` running in another thread (Transformers'
    ``TextIteratorStreamer``); ``timeout`` bounds each wait (``queue.Empty`` past it), and
    ``cancel()`` stops the generation."""

    def __init__(self, tokenizer: Any, skip_prompt: bool = False, timeout: Optional[float] = None,
                 **decode_kwargs: Any) -> None:
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue: queue.Queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        if text:
            self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self) -> "TextIteratorStreamer":
        return self

    def __next__(self) -> str:
        value = self.text_queue.get(timeout=self.timeout)
        if value == self.stop_signal:
            raise StopIteration()
        return value
