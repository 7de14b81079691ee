"""Hostile numbers and files on the command line (issue 29, "CLI numbers"): every one is a clear
error with docs/cli.md's exit code (2: a bad value on the command line; 1: a file or model that
cannot be used), never an abort, a hang or memory taken without limit.

Each subprocess runs with a timeout (a regression that hangs fails instead of blocking the
suite) and, where a value once made GenieX allocate gigabytes, under an address-space limit."""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/models/tiny-qwen2-q8_0.gguf"
TINY_GEMMA = REPO / "tests/data/models/tiny-gemma3-q8_0.gguf"  # has sliding-window layers

USAGE, ERROR = 2, 1
MEMORY_LIMIT = 2 << 30  # bytes of address space: far more than any of these commands needs


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(geniex_bin, *args, timeout=30, limit_memory=False, stdin=subprocess.DEVNULL):
    return subprocess.run([str(geniex_bin), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=stdin,
                          preexec_fn=_limit_memory if limit_memory else None)


def no_crash(r):
    """No abort, no CLI11 or C++ exception text: the process exited with one of our codes."""
    assert r.returncode in (0, ERROR, USAGE), (r.returncode, r.stderr)
    for text in ("terminate called", "internal error", "Aborted", "bad_alloc"):
        assert text not in r.stderr, r.stderr


# ---- thread counts ----------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["run", "-m", TINY, "-p", "hi", "-t", "1000000"],
    ["chat", "-m", TINY, "-t", "1000000"],
    ["serve", "-m", TINY, "--port", "0", "-t", "1000000"],
    ["bench", "-m", TINY, "-t", "2147483647", "-r", "1"],
    ["perplexity", "-m", TINY, "-f", TINY, "-t", "5000"],
])
def test_absurd_thread_counts_are_usage_errors(geniex_bin, args):
    r = run(geniex_bin, *args)
    no_crash(r)
    assert r.returncode == USAGE, r.stderr
    assert "-t/--threads" in r.stderr and "too large (at most 1024)" in r.stderr, r.stderr


def test_the_largest_thread_count_still_runs(geniex_bin):
    # 1024 threads on a 2-core machine: slow to start, but it starts, runs and stops cleanly.
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "-n", "2", "--raw", "-t", "1024",
            timeout=120)
    no_crash(r)
    assert r.returncode == 0, r.stderr


def test_a_thread_the_system_refuses_is_an_error_not_an_abort(geniex_bin):
    # Under a 2 GiB address-space limit the 8 MiB stacks of 1024 threads cannot all be mapped:
    # the system refuses a thread. This used to abort (a thread pool left joinable threads
    # behind); now the pool joins the ones that started and the load fails with a message.
    def small_address_space():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    r = subprocess.run([str(geniex_bin), "run", "-m", str(TINY), "-p", "hi", "-n", "1", "--raw",
                        "-t", "1024"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, preexec_fn=small_address_space)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert "refused a new thread" in r.stderr and "of 1024 threads" in r.stderr, r.stderr


# ---- sizes and durations ----------------------------------------------------------------------


@pytest.mark.parametrize("args,message", [
    (["run", "-m", TINY, "-p", "hi", "--kv-budget", "17179869184G"],
     "--kv-budget 17179869184G: too large (at most 1024T)"),
    (["run", "-m", TINY, "-p", "hi", "--kv-budget", "-1M"], "--kv-budget -1M: negative"),
    (["bench", "-m", TINY, "-r", "1", "--kv-budget", "99999999999999999999999"],
     "--kv-budget 99999999999999999999999: too large"),
    (["serve", "-m", TINY, "--port", "0", "--kv-budget", "17179869184G"],
     "--kv-budget 17179869184G: too large"),
    (["serve", "-m", TINY, "--port", "0", "--max-body-mb", "1e30"],
     "--max-body-mb 1e30: too large (at most 1024)"),
    (["serve", "-m", TINY, "--port", "0", "--max-body-mb", "nan"], "--max-body-mb nan: not a number"),
    (["serve", "-m", TINY, "--port", "0", "--shutdown-timeout", "nan"],
     "--shutdown-timeout nan: not a number"),
    (["serve", "-m", TINY, "--port", "0", "--shutdown-timeout", "-inf"],
     "--shutdown-timeout -inf: negative"),
    (["serve", "-m", TINY, "--port", "0", "--shutdown-timeout", "inf"],
     "--shutdown-timeout inf: too large (at most 86400)"),
    (["run", "-m", TINY, "-p", "hi", "-c", "99999999999"], "-c/--ctx 99999999999: too large"),
    (["run", "-m", TINY, "-p", "hi", "--keep", "-4"], "--keep -4: negative"),
    (["bench", "-m", TINY, "-p", "1e9"], "-p/--n-prompt 1e9: not a whole number"),
    # serve's counts read through the same parser (CLI11's Range let "nan" or "1e3" through as
    # conversion errors and said "-c 1" only after loading the model, with exit 1).
    (["serve", "-m", TINY, "--port", "0", "-c", "1"], "too small (a context holds"),
    (["serve", "-m", TINY, "--port", "0", "-c", "99999999999"], "-c/--ctx 99999999999: too large"),
    (["serve", "-m", TINY, "--port", "70000"], "--port 70000: too large (at most 65535)"),
    (["serve", "-m", TINY, "--port", "0", "--parallel", "0"], "--parallel 0: too small"),
    (["serve", "-m", TINY, "--port", "0", "--queue", "-1"], "--queue -1: negative"),
    (["serve", "-m", TINY, "--port", "0", "--max-conns", "nan"],
     "--max-conns nan: not a whole number"),
    (["serve", "-m", TINY, "--port", "0", "--max-conns-per-client", "1e9"],
     "--max-conns-per-client 1e9: not a whole number"),
])
def test_bad_sizes_and_durations_are_usage_errors(geniex_bin, args, message):
    r = run(geniex_bin, *args)
    no_crash(r)
    assert r.returncode == USAGE, r.stderr
    assert message in r.stderr, r.stderr


# ---- token counts against the context ---------------------------------------------------------


def test_bench_prompt_beyond_any_context_is_refused_before_allocating(geniex_bin):
    # -p 2^31 - 1 used to allocate 8 GB of token ids before any check (here: bad_alloc).
    r = run(geniex_bin, "bench", "-m", TINY, "-p", "2147483647", "-r", "1", limit_memory=True)
    no_crash(r)
    assert r.returncode == USAGE, r.stderr
    assert "a context holds at most 2147483647" in r.stderr, r.stderr


def test_bench_prompt_beyond_the_model_context_is_refused_before_allocating(geniex_bin):
    r = run(geniex_bin, "bench", "-m", TINY, "-p", "2000000000", "-n", "0", "-r", "1",
            limit_memory=True)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert "the model's context holds 2048" in r.stderr, r.stderr
    r = run(geniex_bin, "bench", "-m", TINY, "-p", "64", "-n", "64", "-c", "100", "-r", "1")
    assert r.returncode == USAGE and "but -c is 100" in r.stderr, r.stderr


def test_run_with_a_context_of_one_token_says_so(geniex_bin):
    # It used to say "context shift keeps 0 tokens; it must be in [0, n_ctx / 2 = 0)".
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "--ctx", "1")
    no_crash(r)
    assert r.returncode == USAGE, r.stderr
    assert "-c/--ctx 1: too small" in r.stderr and "shift" not in r.stderr, r.stderr


def _patched_gguf(src: Path, dst: Path, key: str, value: int) -> Path:
    """A copy of `src` with the uint32 metadata `key` set to `value` (in place, same type)."""
    import gguf

    shutil.copy(src, dst)
    reader = gguf.GGUFReader(str(dst), "r+")
    field = reader.fields[key]
    field.parts[field.data[0]][0] = value
    del reader  # flushes the memory map
    return dst


@pytest.mark.parametrize("src,key", [
    (TINY, "qwen2.context_length"),
    (TINY_GEMMA, "gemma3.attention.sliding_window"),
])
@pytest.mark.parametrize("ctx", ["0", "64"])
def test_a_gguf_with_a_context_beyond_int32_is_a_clear_load_error(geniex_bin, tmp_path, src, key,
                                                                  ctx):
    # 3e9 used to be narrowed to a negative int32: "KV cache: context too large for one pool",
    # or an attention op refusing a negative sliding window.
    model = _patched_gguf(src, tmp_path / "huge.gguf", key, 3_000_000_000)
    r = run(geniex_bin, "run", "-m", model, "-p", "hi", "-n", "1", "--raw", "-c", ctx,
            limit_memory=True)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert f"metadata key '{key}' is 3000000000, expected" in r.stderr, r.stderr
    assert "2147483647" in r.stderr, r.stderr


# ---- files that are not regular files ---------------------------------------------------------


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "model.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("args", [
    ["inspect", "{fifo}"],
    ["inspect", "-m", "{fifo}"],
    ["tokenize", "-m", "{fifo}", "hello"],
    ["run", "-m", "{fifo}", "-p", "hi"],
    ["tokenize", "-m", TINY, "-f", "{fifo}"],
    ["run", "-m", TINY, "-f", "{fifo}"],
    ["perplexity", "-m", TINY, "-f", "{fifo}"],
])
def test_a_fifo_is_refused_without_hanging(geniex_bin, fifo, args):
    # Nothing ever writes to the FIFO: opening it to read would block forever.
    r = run(geniex_bin, *[str(a).format(fifo=fifo) for a in args], timeout=20)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert f"{fifo} is a FIFO (named pipe), not a regular file" in r.stderr, r.stderr


def test_save_state_into_a_fifo_is_refused_without_hanging(geniex_bin, fifo):
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "-n", "1", "--raw", "--save-state", fifo,
            timeout=20)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert f"{fifo} is a FIFO (named pipe), not a regular file" in r.stderr, r.stderr


def test_load_state_from_a_device_or_a_huge_file_is_refused_before_reading(geniex_bin, tmp_path):
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "-n", "1", "--load-state", "/dev/zero",
            limit_memory=True)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert "/dev/zero is a character device, not a regular file" in r.stderr, r.stderr
    big = tmp_path / "big.gxkv"
    with open(big, "wb") as f:  # sparse: 64 GiB on paper, no disk used
        f.truncate(64 << 30)
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "-n", "1", "--load-state", big,
            limit_memory=True)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert "68719476736 bytes; at most" in r.stderr, r.stderr


def test_text_from_a_directory_is_an_error(geniex_bin, tmp_path):
    # tokenize -f DIR used to exit 0 with no output.
    for args in (["tokenize", "-m", TINY, "-f", tmp_path], ["run", "-m", TINY, "-f", tmp_path],
                 ["perplexity", "-m", TINY, "-f", tmp_path]):
        r = run(geniex_bin, *args)
        no_crash(r)
        assert r.returncode == ERROR, r.stderr
        assert f"{tmp_path} is a directory, not a regular file" in r.stderr, r.stderr
        assert r.stdout == ""


def test_endless_standard_input_is_bounded(geniex_bin):
    # `tokenize < /dev/zero` reads at most 256 MiB and says so instead of growing without end.
    with open("/dev/zero", "rb") as zero:
        r = run(geniex_bin, "tokenize", "-m", TINY, "-f", "-", stdin=zero, timeout=60,
                limit_memory=True)
    no_crash(r)
    assert r.returncode == ERROR, r.stderr
    assert "standard input is more than 268435456 bytes" in r.stderr, r.stderr
