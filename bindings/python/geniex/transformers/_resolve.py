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

__all__ = ["register_model", "resolve"]

_REGISTERED: dict[str, str] = {}

# The default model (scripts/setup.sh assembles it; `geniex pull` fetches the same).
_DEFAULT_MODEL = "gemma-3-270m-q4_k_m.gguf"
_DEFAULT_NAMES = ("google/gemma-3-270m", "google/gemma-3-270m-it", "gemma-3-270m")


def register_model(name: str, path: Union[str, os.PathLike]) -> None:
    """Maps a model id (e.g. ``"Qwen/Qwen2.5-7B-Instruct"``) to a local GGUF file."""
    _REGISTERED[name] = os.fspath(path)


def _model_map() -> dict[str, str]:
    raw = os.environ.get("GENIEX_MODEL_MAP", "").strip()
    if not raw:
        return {}
    if not raw.startswith("{"):
        raw = Path(raw).read_text()
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("GENIEX_MODEL_MAP must be a JSON object of model id -> GGUF path")
    return {str(k): str(v) for k, v in data.items()}


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
