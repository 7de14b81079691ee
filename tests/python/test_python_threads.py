"""The geniex Python package with threads and signals: concurrent generations from Python
threads (the GIL is released, the engine batches them) equal their solo runs; Ctrl-C (SIGINT)
during a long prefill and during decode raises KeyboardInterrupt within 0.5 s and the process
exits."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import geniex

PROMPTS = ["The capital of France is", "def fibonacci(n):"]


def test_two_threads_generate_at_once_and_equal_their_solo_runs(gemma_gguf):
    with geniex.load(gemma_gguf, device="cpu", n_threads=2, deterministic=True,
                     max_sequences=2, n_ctx=512) as m:
        solo = [m.generate(p, max_tokens=24, temperature=0) for p in PROMPTS]
        results: list = [None, None]
        start = threading.Barrier(2)
        live_pieces = [0, 0]

        def work(i: int) -> None:
            start.wait()

            def on_token(text, token):
                live_pieces[i] += 1

            results[i] = m.generate(PROMPTS[i], max_tokens=24, temperature=0, on_token=on_token)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        steps_before = m.engine_stats().steps
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        for got, ref in zip(results, solo):
            assert got is not None
            assert got.tokens == ref.tokens and got.text == ref.text
        assert all(n > 0 for n in live_pieces)
        # Batched: the two 24-token generations shared steps (fewer than run one after another).
        steps = m.engine_stats().steps - steps_before
        assert steps < sum(len(r.tokens) + 1 for r in solo)


CHILD = textwrap.dedent("""
    import sys, time
    import geniex
    mode, path = sys.argv[1], sys.argv[2]
    m = geniex.load(path, device="cpu", n_threads=2, n_ctx=4096)
    if mode == "prefill":
        prompt = "The history of the city is long and complicated. " * 250
        kw = dict(max_tokens=4)
    else:
        prompt = "Once upon a time"
        kw = dict(max_tokens=3000, ignore_eos=True)
    print("GO", flush=True)
    t0 = time.monotonic()
    pieces = []
    try:
        if mode == "stream":
            for p in m.stream(prompt, temperature=0, **kw):
                pieces.append(p.text)
        else:
            m.generate(prompt, temperature=0,
                       on_token=(lambda t, i: pieces.append(t)) if mode == "decode" else None,
                       **kw)
        print("FINISHED", flush=True)
    except KeyboardInterrupt:
        print(f"INTERRUPTED {len(pieces)}", flush=True)
""")


@pytest.mark.parametrize("mode", ["prefill", "decode", "stream"])
def test_ctrl_c_raises_keyboard_interrupt_within_half_a_second(gemma_gguf, build_dir, mode):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(geniex.__file__).parent.parent),
                                         env.get("PYTHONPATH", "")])
    # A harness started in the background of a non-interactive shell passes SIGINT down ignored,
    # and Python then installs no KeyboardInterrupt handler: give the child the default
    # disposition, as a terminal's foreground process has.
    proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(gemma_gguf)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "GO", proc.stderr.read()
        # Prefill of ~2500 tokens takes seconds on 2 threads; decode has started by 1.5 s.
        time.sleep(0.5 if mode == "prefill" else 1.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().strip()
        latency = time.monotonic() - sent
        assert line.startswith("INTERRUPTED"), (line, proc.stderr.read())
        assert latency < 0.5, f"KeyboardInterrupt {latency:.3f} s after SIGINT"
        n_pieces = int(line.split()[1])
        if mode == "prefill":
            assert n_pieces == 0
        else:
            assert n_pieces > 0
        # The process exits (the cancelled generation ends at its next engine step).
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_process_exits_cleanly_after_generations_with_cancel_tokens_and_streams(gemma_gguf):
    # Generation threads must never hold Python objects: one that drops the last reference to
    # one at interpreter exit would take the GIL while Python finalizes ("terminate called").
    child = textwrap.dedent("""
        import sys, geniex
        m = geniex.load(sys.argv[1], device="cpu", n_threads=2)
        tok = geniex.CancelToken()
        m.generate("Hi", max_tokens=4, cancel=tok, on_token=lambda t, i: None)
        s = m.stream("Hello", max_tokens=64, cancel=geniex.CancelToken())
        next(iter(s))
        tok2 = geniex.CancelToken()
        m.generate("Hey", max_tokens=2, cancel=tok2)
        print("DONE", flush=True)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(geniex.__file__).parent.parent),
                                         env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", child, str(gemma_gguf)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "DONE", r.stderr
    assert "terminate" not in r.stderr
