"""``AutoProcessor`` of the Transformers drop-in for vision-language GGUF models (LFM2-VL...):
the tokenizer plus the images, carried to ``generate()`` as the engine takes them.

``processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=True,
return_dict=True, return_tensors="pt")`` gives a :class:`BatchFeature` with ``input_ids`` (the
chat template's ids, one image token per image: the engine expands each image into its
embeddings while generating), ``attention_mask`` and ``pixel_values``, an :class:`ImageInputs`
that holds the images (paths or encoded bytes) for the model's ``generate(**inputs)``. GenieX's
C++ preprocessor resizes and normalizes them when the model runs, so there is no pixel tensor
here to look at."""

from __future__ import annotations

import io
import os
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

from ._resolve import resolve
from .tokenization import BatchEncoding, GenieXTokenizer, _is_batch_of_conversations

__all__ = ["AutoProcessor", "BatchFeature", "GenieXProcessor", "ImageInputs"]

ImageSource = Union[str, bytes]


def image_source(image: Any) -> ImageSource:
    """An image as the engine reads it: a file path (str) or an encoded file's bytes. Takes a
    path, ``os.PathLike``, bytes, or a PIL image (encoded to PNG). URLs are refused: GenieX
    never downloads."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        return bytes(image)
    if isinstance(image, str) or hasattr(image, "__fspath__"):
        path = os.fspath(image)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if path.startswith(("http://", "https://")):
            raise OSError(f"image {path!r}: GenieX never downloads; save the image to a file "
                          "and pass its path")
        if path.startswith("file://"):
            path = path[len("file://"):]
        return path
    if hasattr(image, "save") and hasattr(image, "mode"):  # a PIL.Image.Image
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return buf.getvalue()
    raise TypeError(f"an image is a path, the encoded file's bytes or a PIL image, not "
                    f"{type(image).__name__}")


class ImageInputs:
    """``pixel_values`` of a :class:`BatchFeature`: the images of each row of the batch, in
    prompt order, as the engine reads them (paths or encoded bytes). The model's ``generate``
    hands them to the engine, which decodes, resizes and normalizes them (its C++
    preprocessor) and puts image i where the row's i-th image token is."""

    def __init__(self, rows: Sequence[Sequence[ImageSource]],
                 texts: Optional[Sequence[Optional[str]]] = None,
                 ids: Optional[Sequence[Optional[Sequence[int]]]] = None) -> None:
        self.rows: list[list[ImageSource]] = [list(r) for r in rows]
        # The prompt text each row's ids were made from (when known): generate() passes it to
        # the engine as is, rather than spelling the ids back out.
        self._texts = list(texts) if texts is not None else [None] * len(self.rows)
        self._ids = [None if i is None else tuple(int(t) for t in i)
                     for i in (ids if ids is not None else [None] * len(self.rows))]

    def text_for(self, row: int, ids: Sequence[int]) -> Optional[str]:
        """The prompt text of row ``row`` if ``ids`` are still the ids it was tokenized to."""
        if row < len(self._ids) and self._ids[row] == tuple(ids):
            return self._texts[row]
        return None

    def to(self, *args: Any, **kwargs: Any) -> "ImageInputs":
        """Device and dtype moves are no-ops (the engine places the vision encoder)."""
        return self

    def cpu(self) -> "ImageInputs":
        return self

    @property
    def device(self) -> str:
        return "cpu"

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows)

    def __iter__(self) -> Iterator[ImageSource]:
        return iter([img for r in self.rows for img in r])

    def __repr__(self) -> str:
        counts = [len(r) for r in self.rows]
        return f"ImageInputs(images per row={counts})"


class BatchFeature(BatchEncoding):
    """Transformers' ``BatchFeature``: ``input_ids``, ``attention_mask`` and ``pixel_values``
    (an :class:`ImageInputs`), with attribute access, ``.to(device)`` and ``**inputs``."""

    def __repr__(self) -> str:
        return f"BatchFeature({self.data!r})"


def _normalize_conversation(conv: Sequence[Any]) -> tuple[list[Any], list[ImageSource]]:
    """The conversation with every image part as {"type": "image", "image": path-or-bytes}, and
    its images in order. Parts with no image ({"type": "image"}) keep a placeholder so that the
    template renders the image token; such a conversation has no images to generate with."""
    out: list[Any] = []
    images: list[ImageSource] = []
    for msg in conv:
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, (list, tuple)):
            parts = []
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind in ("image", "image_url"):
                    src = None
                    for key in ("image", "path", "url", "image_url"):
                        v = part.get(key)
                        if isinstance(v, dict) and "url" in v:  # OpenAI's image_url form
                            v = v["url"]
                        if v is not None:
                            src = image_source(v)
                            break
                    if src is not None:
                        images.append(src)
                    parts.append({"type": "image", "image": src if src is not None else b"\0"})
                else:
                    parts.append(part)
            msg = dict(msg, content=parts)
        out.append(msg)
    return out, images


def _flatten_images(images: Any, batch: int) -> list[list[ImageSource]]:
    """``images=`` of ``processor(...)``: one image, a list (one row, or one image per row when
    there are as many as rows of text), or a list of lists (one per row)."""
    if images is None:
        return [[] for _ in range(batch)]
    if not isinstance(images, (list, tuple)):
        images = [images]
    if images and all(isinstance(i, (list, tuple)) for i in images):
        rows = [[image_source(i) for i in r] for r in images]
    elif batch > 1 and len(images) == batch:
        rows = [[image_source(i)] for i in images]
    else:
        rows = [[image_source(i) for i in images]]
    if len(rows) != batch:
        raise ValueError(f"{len(rows)} rows of images for {batch} texts")
    return rows


class GenieXProcessor:
    """A Transformers-compatible processor over a vision-language GGUF model: a tokenizer
    (``.tokenizer``) and the images for ``generate``."""

    def __init__(self, tokenizer: GenieXTokenizer, name_or_path: str = "") -> None:
        self.tokenizer = tokenizer
        self.name_or_path = name_or_path
        self.image_processor = None  # the engine's C++ preprocessor does this job
        marker = tokenizer._model.info.image_marker
        self.image_token = marker or "<image>"

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        gguf_file: Optional[str] = None, **kwargs: Any) -> "GenieXProcessor":
        """The processor of a GGUF file, folder or mapped model id (never downloads)."""
        path = resolve(pretrained_model_name_or_path, gguf_file)
        tok = GenieXTokenizer.from_pretrained(path)
        tok.name_or_path = os.fspath(pretrained_model_name_or_path)
        return cls(tok, os.fspath(pretrained_model_name_or_path))

    # ---- text + images -------------------------------------------------------------------------
    def __call__(self, text: Union[str, Sequence[str], None] = None, images: Any = None, *args: Any,
                 return_tensors: Optional[str] = None, add_special_tokens: bool = True,
                 padding: Any = False, **kwargs: Any) -> BatchFeature:
        """Tokenizes ``text`` (special-token text parsed) and carries ``images`` along: image i
        of a row goes where the row's i-th image token is."""
        if text is None:
            raise ValueError("GenieX's processor needs text (with the image tokens) as well as "
                             "images: the engine encodes images while generating")
        batched = not isinstance(text, str)
        texts = list(text) if batched else [text]
        enc = self.tokenizer(texts if batched else text, add_special_tokens=add_special_tokens,
                             padding=padding, return_tensors=return_tensors, **kwargs)
        rows = [self.tokenizer._model.tokenize(t, add_special=add_special_tokens,
                                               parse_special=True) for t in texts]
        imgs = _flatten_images(images, len(texts))
        if any(imgs):
            # The engine reads special tokens from the text; BOS is added only when the ids have
            # it first and the text does not (add_special_tokens).
            data = dict(enc.data)
            data["pixel_values"] = ImageInputs(
                imgs, [self._text_of(t, r) for t, r in zip(texts, rows)], rows)
            return BatchFeature(data)
        return BatchFeature(enc.data)

    def _text_of(self, text: str, ids: list[int]) -> str:
        bos = self.tokenizer.bos_token_id
        if bos is not None and ids and ids[0] == bos:
            piece = self.tokenizer._model.token_piece(bos)
            if not text.startswith(piece):
                return piece + text
        return text

    def apply_chat_template(self, conversation: Any, chat_template: Optional[str] = None,
                            add_generation_prompt: bool = False, tokenize: bool = False,
                            return_dict: bool = False, return_tensors: Optional[str] = None,
                            padding: Any = False, truncation: bool = False,
                            max_length: Optional[int] = None, tools: Any = None,
                            documents: Any = None, **kwargs: Any):
        """Renders conversations whose messages may hold image parts ({"type": "image",
        "image": path | bytes | PIL image} or "path"/"url" keys) with the model's chat template.
        ``tokenize=False``: the text (as in Transformers, the default for processors).
        ``tokenize=True``: ids; with ``return_dict=True`` a :class:`BatchFeature` of
        ``input_ids``, ``attention_mask`` and ``pixel_values`` (the images) for
        ``model.generate(**inputs)``."""
        for key in ("num_frames", "video_load_backend", "load_audio_from_video"):
            kwargs.pop(key, None)
        batched = _is_batch_of_conversations(conversation)
        convs = list(conversation) if batched else [conversation]
        normalized = [_normalize_conversation(c) for c in convs]
        tok = self.tokenizer
        texts = [tok.apply_chat_template(c, tools=tools, documents=documents,
                                         chat_template=chat_template,
                                         add_generation_prompt=add_generation_prompt,
                                         tokenize=False, **kwargs)
                 for c, _ in normalized]
        if not tokenize:
            return texts if batched else texts[0]
        rows = [tok._model.tokenize(t, add_special=False, parse_special=True) for t in texts]
        enc = tok._encode_rows([list(r) for r in rows], batched=batched, padding=padding,
                               truncation=truncation, max_length=max_length,
                               return_tensors=return_tensors, return_attention_mask=None)
        if not return_dict:
            return enc["input_ids"]
        data = dict(enc.data)
        images = [imgs for _, imgs in normalized]
        if any(images):
            data["pixel_values"] = ImageInputs(images, texts, rows)
        return BatchFeature(data)

    # ---- decoding: the tokenizer's ------------------------------------------------------------
    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=skip_special_tokens, **kwargs)

    def batch_decode(self, sequences: Iterable[Any], skip_special_tokens: bool = False,
                     **kwargs: Any) -> list[str]:
        return self.tokenizer.batch_decode(sequences, skip_special_tokens=skip_special_tokens,
                                           **kwargs)

    def post_process_image_text_to_text(self, generated_outputs: Any,
                                        skip_special_tokens: bool = True,
                                        **kwargs: Any) -> list[str]:
        return self.batch_decode(generated_outputs, skip_special_tokens=skip_special_tokens)

    @property
    def chat_template(self) -> Optional[str]:
        return self.tokenizer.chat_template


class AutoProcessor:
    """``AutoProcessor.from_pretrained(path_or_id)``: a :class:`GenieXProcessor`."""

    def __init__(self) -> None:
        raise EnvironmentError("AutoProcessor is created with AutoProcessor.from_pretrained(...)")

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path: Union[str, os.PathLike], *args: Any,
                        **kwargs: Any) -> GenieXProcessor:
        return GenieXProcessor.from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
