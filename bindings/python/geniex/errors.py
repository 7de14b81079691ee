"""GenieX's errors as Python exceptions.

Every error carries the engine's status code (``.code``, e.g. ``"NOT_FOUND"``) and message
(``.message``). Each class also derives from the builtin exception that code would raise in
plain Python, so code written for Hugging Face Transformers catches it as usual::

    try:
        geniex.load("missing.gguf")
    except FileNotFoundError as e:      # geniex.ModelNotFound
        print(e.code, e.message)
"""

from __future__ import annotations

__all__ = [
    "GenieXError",
    "InvalidArgument",
    "ModelNotFound",
    "NotFound",
    "OutOfRange",
    "ContextFull",
    "DataLoss",
    "CorruptFile",
    "Unimplemented",
    "OutOfMemory",
    "ResourceExhausted",
    "IoError",
    "InternalError",
    "from_status",
]


class GenieXError(Exception):
    """An error reported by the GenieX engine: ``code`` (status code name) and ``message``."""

    code: str = "UNKNOWN"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidArgument(GenieXError, ValueError):
    """The caller passed something malformed (INVALID_ARGUMENT)."""

    code = "INVALID_ARGUMENT"


class ModelNotFound(GenieXError, FileNotFoundError):
    """A file, key or tensor is absent (NOT_FOUND)."""

    code = "NOT_FOUND"


NotFound = ModelNotFound


class OutOfRange(GenieXError, ValueError):
    """A size or index beyond a limit, e.g. a prompt longer than the context (OUT_OF_RANGE)."""

    code = "OUT_OF_RANGE"


ContextFull = OutOfRange


class DataLoss(GenieXError, OSError):
    """A file is corrupt or truncated (DATA_LOSS)."""

    code = "DATA_LOSS"


CorruptFile = DataLoss


class Unimplemented(GenieXError, NotImplementedError):
    """Valid, but not supported by this build (UNIMPLEMENTED)."""

    code = "UNIMPLEMENTED"


class OutOfMemory(GenieXError, MemoryError):
    """Memory or another budget ran out (RESOURCE_EXHAUSTED)."""

    code = "RESOURCE_EXHAUSTED"


ResourceExhausted = OutOfMemory


class IoError(GenieXError, OSError):
    """The operating system refused an I/O call (IO_ERROR)."""

    code = "IO_ERROR"


class InternalError(GenieXError, RuntimeError):
    """A bug in GenieX (INTERNAL): please report it."""

    code = "INTERNAL"


_BY_CODE: dict[str, type[GenieXError]] = {
    cls.code: cls
    for cls in (InvalidArgument, ModelNotFound, OutOfRange, DataLoss, Unimplemented, OutOfMemory,
                IoError, InternalError)
}


def from_status(code: str, message: str) -> GenieXError:
    """The exception for an engine status (used by the native module)."""
    return _BY_CODE.get(code, GenieXError)(message, code)
