"""`geniex run` / `geniex chat` end to end on the real Gemma 3 270M and the tiny models."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((REPO / "tests/data/models/gemma3_270m_greedy.json").read_text())
TINY = REPO / "tests/data/models/tiny-qwen2-q8_0.gguf"


def run(geniex_bin, *args, env=None, input_text=None, timeout=300):
    return subprocess.run([str(geniex_bin), *args], capture_output=True, text=True, env=env,
                          input=input_text, timeout=timeout)


def test_raw_greedy_json_matches_llamacpp_golden(geniex_bin, gemma_gguf):
    case = next(c for c in GOLDEN["cases"] if c["prompt"] == "1, 2, 3, 4, 5,")
    r = run(geniex_bin, "run", "-m", str(gemma_gguf), "--raw", "-p", case["prompt"], "--temp", "0",
            "-n", "48", "-t", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["prompt_token_ids"] == case["prompt_ids"]
    assert out["token_ids"] == case["generated_ids"]
    assert out["text"] == case["generated_text"]
    assert out["stop_reason"] == "length"
    t = out["timings"]
    assert t["generated_tokens"] == 48 and t["generation_tokens_per_second"] > 0
    assert t["prompt_tokens"] == len(case["prompt_ids"]) and t["ttft_ms"] > 0


def test_streaming_text_then_timings_line(geniex_bin, gemma_gguf, tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("The quick brown fox")
    r = run(geniex_bin, "run", "-m", str(gemma_gguf), "--raw", "-f", str(prompt), "--temp", "0",
            "-n", "12", "-t", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(" jumps over the lazy dog")
    last = r.stderr.strip().splitlines()[-1]
    assert "prompt:" in last and "generation:" in last and "tok/s" in last and "TTFT" in last


def test_chat_mode_uses_the_template(geniex_bin, gemma_gguf):
    want = next(c for c in GOLDEN["cases"] if c["kind"] == "chat")
    question = want["prompt"].split("user\n", 1)[1].split("<end_of_turn>", 1)[0]
    r = run(geniex_bin, "run", "-m", str(gemma_gguf), "-p", question, "--temp", "0", "-n", "48",
            "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["prompt_token_ids"] == want["prompt_ids"]
    assert out["token_ids"] == want["generated_ids"]


def test_seed_reproducible_and_stop_string(geniex_bin):
    args = ["run", "-m", str(TINY), "--raw", "-p", "Hello world", "-n", "16", "--json",
            "--temp", "1", "--seed", "7"]
    a, b = run(geniex_bin, *args), run(geniex_bin, *args)
    assert a.returncode == 0 and b.returncode == 0, a.stderr
    assert json.loads(a.stdout)["token_ids"] == json.loads(b.stdout)["token_ids"]
    g = run(geniex_bin, "run", "-m", str(TINY), "--raw", "-p", "Hello world", "-n", "16",
            "--temp", "0", "--json")
    text = json.loads(g.stdout)["text"]
    stop = text[3:9]
    s = run(geniex_bin, "run", "-m", str(TINY), "--raw", "-p", "Hello world", "-n", "16",
            "--temp", "0", "--json", "--stop", stop)
    out = json.loads(s.stdout)
    assert out["stop_reason"] == "stop" and out["text"] == text[:text.find(stop)]


def test_errors_are_clear_and_exit_nonzero(geniex_bin, tmp_path):
    r = run(geniex_bin, "run", "-m", str(tmp_path / "nope.gguf"), "-p", "hi")
    assert r.returncode == 1 and "nope.gguf" in r.stderr and "does not exist" in r.stderr
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00garbage")
    r = run(geniex_bin, "run", "-m", str(bad), "-p", "hi")
    assert r.returncode == 1 and "bad.gguf" in r.stderr
    r = run(geniex_bin, "run", "-m", str(TINY), "-c", "8", "--raw", "-p", "one two three four "
            "five six seven eight nine ten eleven twelve")
    assert r.returncode == 1 and "context" in r.stderr
    r = run(geniex_bin, "run", "-m", str(TINY), input_text="")
    assert r.returncode == 2 and "no prompt" in r.stderr
    env = dict(os.environ, GENIEX_MODEL=str(tmp_path / "missing-default.gguf"))
    r = run(geniex_bin, "run", "-p", "hi", env=env)
    assert r.returncode == 1 and "setup.sh" in r.stderr


def test_chat_repl_keeps_the_conversation(geniex_bin, gemma_gguf):
    r = run(geniex_bin, "chat", "-m", str(gemma_gguf), "--temp", "0", "-n", "8", "-t", "2",
            input_text="Hello!\nWhat did I just say?\n/exit\n")
    assert r.returncode == 0, r.stderr
    assert len([line for line in r.stdout.splitlines() if line.strip()]) >= 2
