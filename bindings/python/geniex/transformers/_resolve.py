"""Model ids and paths -> a local GGUF file, never a download.

Order: a ``.gguf`` file; a folder of GGUF files (``gguf_file=`` picks one, as in Transformers);
a name registered with :func:`register_model`; ``$GENIEX_MODEL_MAP`` (a JSON object, id ->
path, or the path of such a file); the default model's names (the file ``scripts/setup.sh``
makes); the Hugging Face hub cache. Anything else is an ``OSError`` worded as Transformers
words it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Union

__all__ = ["find_mmproj", "register_model", "resolve"]

_REGISTERED: dict[str, str] = {}
_REGISTERED_MMPROJ: dict[str, str] = {}

# The default model (scripts/setup.sh assembles it; `geniex pull` fetches the same).
_DEFAULT_MODEL = "gemma-3-270m-q4_k_m.gguf"
_DEFAULT_NAMES = ("google/gemma-3-270m", "google/gemma-3-270m-it", "gemma-3-270m")


def register_model(name: str, path: Union[str, os.PathLike],
                   mmproj: Optional[Union[str, os.PathLike]] = None) -> None:
    """Maps a model id (e.g. ``"Qwen/Qwen2.5-7B-Instruct"``) to a local GGUF file, and for a
    vision-language model optionally to its vision encoder (mmproj) GGUF."""
    _REGISTERED[name] = os.fspath(path)
    if mmproj is not None:
        _REGISTERED_MMPROJ[name] = os.fspath(mmproj)
    else:
        _REGISTERED_MMPROJ.pop(name, None)


def _model_map_entries() -> dict[str, tuple[str, Optional[str]]]:
    raw = os.environ.get("GENIEX_MODEL_MAP", "").strip()
    if not raw:
        return {}
    if not raw.startswith("{"):
        raw = Path(raw).read_text()
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("GENIEX_MODEL_MAP must be a JSON object of model id -> GGUF path")
    out: dict[str, tuple[str, Optional[str]]] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            if "model" not in v:
                raise ValueError(f"GENIEX_MODEL_MAP[{k!r}]: an object needs 'model' (and may "
                                 "have 'mmproj')")
            mm = v.get("mmproj")
            out[str(k)] = (str(v["model"]), None if mm is None else str(mm))
        else:
            out[str(k)] = (str(v), None)
    return out


def _model_map() -> dict[str, str]:
    return {k: v[0] for k, v in _model_map_entries().items()}


def _default_model() -> Path:
    env = os.environ.get("GENIEX_MODEL")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "geniex" / "models" / _DEFAULT_MODEL


def _pick_in_dir(folder: Path, gguf_file: Optional[str], name: str) -> Path:
    if gguf_file:
        p = folder / gguf_file
        if not p.is_file():
            raise OSError(f"{name} does not appear to have a file named {gguf_file}.")
        return p
    files = sorted(p for p in folder.glob("*.gguf") if not p.name.startswith("mmproj"))
    if len(files) == 1:
        return files[0]
    if not files:
        raise OSError(f"{name} does not appear to have a GGUF file (*.gguf).")
    raise OSError(f"{name} has several GGUF files ({', '.join(p.name for p in files)}): "
                  "pass gguf_file= to pick one.")


def _hub_cache(name: str) -> Optional[Path]:
    home = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.join(Path.home(), ".cache", "huggingface")), "hub")
    snapshots = Path(home) / ("models--" + name.replace("/", "--")) / "snapshots"
    if not snapshots.is_dir():
        return None
    for snap in sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
        if any(snap.glob("*.gguf")):
            return snap
    return None


def resolve(name_or_path: Union[str, os.PathLike], gguf_file: Optional[str] = None) -> Path:
    """The GGUF file for a path or model id (see the module docstring for the order)."""
    name = os.fspath(name_or_path)
    p = Path(name).expanduser()
    if p.is_file():
        return p
    if p.is_dir():
        return _pick_in_dir(p, gguf_file, name)
    for table in (_REGISTERED, _model_map()):
        if name in table:
            return resolve(table[name], gguf_file)
    if name in _DEFAULT_NAMES:
        d = _default_model()
        if d.exists():
            return d
    snap = _hub_cache(name)
    if snap is not None:
        return _pick_in_dir(snap, gguf_file, name)
    raise OSError(
        f"We couldn't find '{name}': it is not a GGUF file or folder, not registered with "
        "geniex.transformers.register_model(), not in GENIEX_MODEL_MAP and not in the Hugging "
        "Face cache with a GGUF file. GenieX never downloads: fetch the GGUF file first.")


_QUANT_TAGS = ("f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_0", "q5_1", "q4_k_m",
               "q4_k_s", "q4_0", "q4_1", "q3_k_m", "q2_k", "iq4_nl", "iq4_xs")


def _family(stem: str) -> str:
    """A file stem without its trailing weight-type tag ("lfm2-vl-450m-q4_0" -> "lfm2-vl-450m")."""
    low = stem.lower()
    for tag in sorted(_QUANT_TAGS, key=len, reverse=True):
        for sep in ("-", "_", "."):
            if low.endswith(sep + tag):
                return stem[: -len(tag) - 1]
    return stem


def find_mmproj(name_or_path: Union[str, os.PathLike], model_path: Union[str, os.PathLike],
                mmproj: Optional[Union[str, os.PathLike]] = None) -> Optional[Path]:
    """The vision encoder GGUF of a vision-language model, or None for a text model: ``mmproj``
    when given; the one mapped with the id; else beside the model file ``mmproj-<stem>.gguf``,
    ``mmproj-<family>-<any type>.gguf`` (the model's stem without its weight type), or the only
    ``mmproj*.gguf`` of a folder holding one model."""
    if mmproj is not None:
        p = Path(mmproj).expanduser()
        if not p.is_file():
            raise OSError(f"mmproj file {os.fspath(mmproj)!r} does not exist")
        return p
    name = os.fspath(name_or_path)
    mapped = _REGISTERED_MMPROJ.get(name)
    if mapped is None:
        mapped = _model_map_entries().get(name, (None, None))[1]
    if mapped is not None:
        return find_mmproj(name, model_path, mapped)
    model = Path(model_path)
    folder = model.parent
    exact = folder / f"mmproj-{model.name}"
    if exact.is_file():
        return exact
    family = _family(model.stem).lower()
    candidates = sorted(folder.glob("mmproj*.gguf"))
    same = [p for p in candidates
            if _family(p.stem[len("mmproj"):].lstrip("-_")).lower() == family]
    if same:
        # Prefer the most precise encoder (f32 > f16 > quantized): sorted names put f16 before
        # f32, so rank by an explicit order.
        order = {"f32": 0, "f16": 1, "bf16": 2}
        return min(same, key=lambda p: (order.get(p.stem.rsplit("-", 1)[-1].lower(), 3), p.name))
    models = [p for p in folder.glob("*.gguf") if not p.name.startswith("mmproj")]
    if len(candidates) == 1 and len(models) == 1:
        return candidates[0]
    return None
