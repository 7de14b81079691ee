"""Tensors for the Transformers drop-in without torch: ``return_tensors="pt"`` gives torch
tensors when torch is installed, else :class:`Tensor`, an int64 numpy array that answers the
torch calls snippets make (``.to()``, ``.cpu()``, ``.numpy()``, ``.device``, ``.dim()``,
``.size()``). ``"np"`` gives numpy arrays; ``None`` gives lists."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["Tensor", "as_rows", "to_return_type", "kind_of"]


class Tensor(np.ndarray):
    """An int64 ``numpy.ndarray`` with the torch methods Transformers snippets call."""

    def __new__(cls, data: Any) -> "Tensor":
        return np.asarray(data, dtype=np.int64).view(cls)

    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """Device and dtype moves are no-ops: GenieX places the model itself."""
        return self

    def cpu(self) -> "Tensor":
        return self

    def numpy(self) -> np.ndarray:
        return np.asarray(self).view(np.ndarray)

    def dim(self) -> int:
        return self.ndim

    def size(self, dim: Optional[int] = None):  # type: ignore[override]
        return self.shape if dim is None else self.shape[dim]

    @property
    def device(self) -> str:
        return "cpu"

    def long(self) -> "Tensor":
        return self

    # numpy's printing reads .size as the element count, which size() shadows: print as torch.
    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        return f"tensor({body})"

    def __str__(self) -> str:
        return repr(self)


def _torch():
    try:
        import torch  # noqa: PLC0415

        return torch
    except ImportError:
        return None


def kind_of(x: Any) -> Optional[str]:
    """How ids came in: "pt" (torch or our Tensor), "np", or None (lists)."""
    if isinstance(x, Tensor):
        return "pt"
    if isinstance(x, np.ndarray):
        return "np"
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return "pt"
    return None


def as_rows(ids: Any) -> list[list[int]]:
    """Token ids (a 1-D or 2-D list, array or tensor) as a list of rows of ints."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    ids = list(ids)
    if not ids:
        return [[]]
    if isinstance(ids[0], (int, np.integer)):
        return [[int(t) for t in ids]]
    return [[int(t) for t in (row.tolist() if hasattr(row, "tolist") else row)] for row in ids]


def to_return_type(rows: Sequence[Sequence[int]], return_tensors: Optional[str]):
    """Rows of equal length as ``return_tensors`` asks: "pt", "np" or None (lists)."""
    if return_tensors is None:
        return [list(r) for r in rows]
    if return_tensors == "np":
        return np.asarray(rows, dtype=np.int64)
    if return_tensors == "pt":
        torch = _torch()
        if torch is not None:
            return torch.tensor(rows, dtype=torch.long)
        return Tensor(rows)
    raise ValueError(f"return_tensors must be 'pt', 'np' or None, got {return_tensors!r}")
