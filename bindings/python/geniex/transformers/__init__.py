"""A Hugging Face Transformers drop-in on GenieX: code written for ``transformers`` runs with
only the import changed, on GGUF files::

    from geniex.transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained("gemma-3-270m-q4_k_m.gguf")
    model = AutoModelForCausalLM.from_pretrained("gemma-3-270m-q4_k_m.gguf", device_map="auto")
    ids = tok.apply_chat_template([{"role": "user", "content": "Hi"}],
                                  add_generation_prompt=True, return_tensors="pt")
    out = model.generate(ids, max_new_tokens=32)
    print(tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True))

Vision-language models (LFM2-VL...): ``AutoProcessor`` and ``AutoModelForImageTextToText`` (or
4.x's ``AutoModelForVision2Seq``); the model's mmproj GGUF is found beside it or mapped with the
id, and images travel from the processor to ``generate(**inputs)`` as ``pixel_values``.

Model ids resolve to local files (never downloads): see :func:`register_model` and
``GENIEX_MODEL_MAP``. ``return_tensors="pt"`` gives torch tensors when torch is installed, else
:class:`Tensor` (numpy with torch's ``.to()``/``.cpu()``/...); torch is never required.
"""

from ._resolve import find_mmproj, register_model, resolve
from ._tensors import Tensor
from .configuration import GenerationConfig
from .modeling import (AutoModelForCausalLM, AutoModelForImageTextToText, AutoModelForVision2Seq,
                       CausalLMOutput, GenieXForCausalLM, GenieXForImageTextToText)
from .processing import AutoProcessor, BatchFeature, GenieXProcessor, ImageInputs
from .streamers import BaseStreamer, TextIteratorStreamer, TextStreamer
from .tokenization import AutoTokenizer, BatchEncoding, GenieXTokenizer

__all__ = [
    "AutoModelForCausalLM",
    "AutoModelForImageTextToText",
    "AutoModelForVision2Seq",
    "AutoProcessor",
    "AutoTokenizer",
    "BaseStreamer",
    "BatchEncoding",
    "BatchFeature",
    "CausalLMOutput",
    "GenerationConfig",
    "GenieXForCausalLM",
    "GenieXForImageTextToText",
    "GenieXProcessor",
    "GenieXTokenizer",
    "ImageInputs",
    "Tensor",
    "TextIteratorStreamer",
    "TextStreamer",
    "find_mmproj",
    "register_model",
    "resolve",
]
