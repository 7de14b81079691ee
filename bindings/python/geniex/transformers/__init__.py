"""A Hugging Face Transformers drop-in on GenieX: code written for ``transformers`` runs with
only the import changed, on GGUF files::

    from geniex.transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained("gemma-3-270m-q4_k_m.gguf")
    model = AutoModelForCausalLM.from_pretrained("gemma-3-270m-q4_k_m.gguf", device_map="auto")
    ids = tok.apply_chat_template([{"role": "user", "content": "Hi"}],
                                  add_generation_prompt=True, return_tensors="pt")
    out = model.generate(ids, max_new_tokens=32)
    print(tok.decode(out[0][ids.shape[1]:], skip_special_tokens=True))

Model ids resolve to local files (never downloads): see :func:`register_model` and
``GENIEX_MODEL_MAP``. ``return_tensors="pt"`` gives torch tensors when torch is installed, else
:class:`Tensor` (numpy with torch's ``.to()``/``.cpu()``/...); torch is never required.
"""

from ._resolve import register_model, resolve
from ._tensors import Tensor
from .configuration import GenerationConfig
from .modeling import AutoModelForCausalLM, CausalLMOutput, GenieXForCausalLM
from .streamers import BaseStreamer, TextIteratorStreamer, TextStreamer
from .tokenization import AutoTokenizer, BatchEncoding, GenieXTokenizer

__all__ = [
    "AutoModelForCausalLM",
    "AutoTokenizer",
    "BaseStreamer",
    "BatchEncoding",
    "CausalLMOutput",
    "GenerationConfig",
    "GenieXForCausalLM",
    "GenieXTokenizer",
    "Tensor",
    "TextIteratorStreamer",
    "TextStreamer",
    "register_model",
    "resolve",
]
