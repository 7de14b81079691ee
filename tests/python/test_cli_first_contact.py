"""First contact for llama.cpp / Ollama users (issue 28): flag habits, special tokens in raw
prompts, stdin, chat past the context, prefill progress, seeds, threads, typos."""
from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests/data/models/tiny-qwen2-q8_0.gguf"  # has a ChatML template of its own


def run(geniex_bin, *args, input_text="", env=None, timeout=300):
    return subprocess.run([str(geniex_bin), *map(str, args)], capture_output=True, text=True,
                          input=input_text, env=env, timeout=timeout)


def run_json(geniex_bin, *args, input_text=""):
    r = run(geniex_bin, *args, "--json", input_text=input_text)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def tokenize(geniex_bin, text, *flags):
    r = run(geniex_bin, "tokenize", "-m", TINY, "--json", *flags, text)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ids"]


# ---- 3. llama.cpp flag habits ---------------------------------------------------------------

def test_dash_s_is_the_seed_and_is_reported(geniex_bin):
    a, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 12, "--temp", 1,
                    "-s", 42)
    b, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 12,
                    "--temperature", 1, "--seed", 42)
    assert a["seed"] == 42 and a["token_ids"] == b["token_ids"]
    # A random run prints its seed, and that seed repeats it.
    c, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 12, "--temp", 1)
    d, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 12, "--temp", 1,
                    "-s", c["seed"])
    assert c["token_ids"] == d["token_ids"]
    r = run(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 4, "-v", "-s", 5)
    assert r.returncode == 0 and "seed 5" in r.stderr


def test_system_prompt_flags_and_raw_conflict(geniex_bin):
    r = run(geniex_bin, "run", "-m", TINY, "-sys", "You are a pirate.", "-p", "hi", "-n", 1,
            "--verbose-prompt")
    assert r.returncode == 0, r.stderr
    assert "You are a pirate." in r.stderr and "<|im_start|>system" in r.stderr
    r = run(geniex_bin, "run", "-m", TINY, "--raw", "--system-prompt", "x", "-p", "hi")
    assert r.returncode == 2 and "--raw" in r.stderr


def test_n_minus_one_and_ctx_zero(geniex_bin):
    info = json.loads(run(geniex_bin, "inspect", "-m", TINY, "--json").stdout)
    n_ctx_train = next(v["value"] for k, v in _kv(info) if k.endswith(".context_length"))
    out, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", -1, "-c", 0,
                      "--temp", 0, "--ignore-eos")
    assert out["n_ctx"] == n_ctx_train
    assert out["stop_reason"] == "context_full"
    # The last sampled token needs no room: it is never evaluated.
    assert n_ctx_train <= out["prompt_tokens"] + out["generated_tokens"] <= n_ctx_train + 1


def _kv(info):
    meta = info.get("metadata", info.get("kv"))
    if isinstance(meta, dict):
        return [(k, v if isinstance(v, dict) else {"value": v}) for k, v in meta.items()]
    return [(m["key"], m) for m in meta]


def test_flash_attention_flag_is_ignored_with_a_note_and_ngl_is_taken(geniex_bin):
    # -ngl maps to --offload-layers (test_placement_cli checks the split); -fa changes nothing.
    r = run(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hi", "-n", 2, "-ngl", 99, "-fa", "on",
            "--temp", 0)
    assert r.returncode == 0, r.stderr
    assert "-fa/--flash-attn is ignored" in r.stderr, r.stderr
    assert "n-gpu-layers is ignored" not in r.stderr, r.stderr


def test_conversation_flag_runs_the_chat(geniex_bin):
    r = run(geniex_bin, "run", "-m", TINY, "-cnv", "-p", "Hello", "-n", 4, "--temp", 0,
            "--verbose-prompt", input_text="And then?\n/exit\n")
    assert r.returncode == 0, r.stderr
    # Two turns went to the model: the -p text, then the line read from stdin, with history.
    prompts = [line for line in r.stderr.splitlines() if line.startswith("prompt: ")]
    assert len(prompts) == 2, r.stderr
    assert "user\nHello" in r.stderr and "user\nAnd then?" in r.stderr


@pytest.mark.parametrize("args,flag", [
    (["--temp", "-1"], "--temp"),
    (["-c", "-5"], "-c/--ctx"),
    (["--device", "tpu"], "--device"),
    (["--top-p", "0"], "--top-p"),
    (["-n", "-3"], "-n/--max-tokens"),
    (["--kv-type", "q3"], "q3"),
])
def test_flags_are_checked_before_the_model_loads(geniex_bin, tmp_path, args, flag):
    # The model does not exist: an error about the flag proves it was checked first.
    r = run(geniex_bin, "run", "-m", tmp_path / "absent.gguf", "-p", "hi", *args)
    assert r.returncode == 2, r.stderr
    assert flag in r.stderr and "absent.gguf" not in r.stderr


def test_typos_get_a_suggestion(geniex_bin):
    r = run(geniex_bin, "runn", "-p", "hi")
    assert r.returncode == 2 and "Did you mean 'run'" in r.stderr
    r = run(geniex_bin, "chta")
    assert r.returncode == 2 and "Did you mean 'chat'" in r.stderr
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "--tmep", "0")
    assert r.returncode == 2 and "Did you mean '--temp'" in r.stderr


# ---- 4. special tokens in raw prompts ----------------------------------------------------------

def test_raw_prompt_parses_special_tokens_by_default(geniex_bin):
    text = "<|im_start|>user\nhi<|im_end|>\n"
    special = tokenize(geniex_bin, text, "--parse-special")
    plain = tokenize(geniex_bin, text)
    assert special != plain
    out, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", text, "-n", 1)
    assert out["prompt_token_ids"][-len(special):] == special
    out, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "--no-parse-special", "-p", text,
                      "-n", 1)
    assert out["prompt_token_ids"][-len(plain):] == plain


# ---- 5. stdin ------------------------------------------------------------------------------------

def test_prompt_from_stdin(geniex_bin):
    piped, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-n", 2, input_text="hi there\n")
    dash, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-n", 2, "-f", "-",
                       input_text="hi there\n")
    flag, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-n", 2, "-p", "hi there\n")
    assert piped["prompt_token_ids"] == flag["prompt_token_ids"] == dash["prompt_token_ids"]
    r = run(geniex_bin, "tokenize", "-m", TINY, "--json", input_text="hi there\n")
    assert r.returncode == 0 and json.loads(r.stdout)["ids"] == tokenize(geniex_bin, "hi there\n")
    r = run(geniex_bin, "tokenize", "-m", TINY, "-f", "-", input_text="hi there\n")
    assert r.returncode == 0 and r.stdout.strip() != ""


# ---- 6. chat past the context --------------------------------------------------------------------

def test_chat_drops_old_turns_instead_of_failing(geniex_bin):
    turns = [f"Tell me about the number {i} and why it matters so much." for i in range(6)]
    r = run(geniex_bin, "chat", "-m", TINY, "-c", 96, "-n", 12, "--temp", 0, "--ignore-eos",
            input_text="\n".join(turns) + "\n/exit\n")
    assert r.returncode == 0, r.stderr
    assert "dropped the" in r.stderr and "oldest exchange" in r.stderr
    assert "shorten" not in r.stderr and "context holds" not in r.stderr


def test_chat_commands_and_multiline_turns(geniex_bin):
    script = ('/system Answer like a poet.\n'
              '"""first line\nsecond line"""\n'
              'one \\\ntwo\n'
              '/exit\n')
    r = run(geniex_bin, "chat", "-m", TINY, "-n", 2, "--temp", 0, "--verbose-prompt",
            input_text=script)
    assert r.returncode == 0, r.stderr
    assert "Answer like a poet." in r.stderr
    assert "first line\\nsecond line" in r.stderr or "first line\nsecond line" in r.stderr
    assert "one \ntwo" in r.stderr
    h = run(geniex_bin, "chat", "--help")
    for cmd in ("/reset", "/exit", "/quit", "/system"):
        assert cmd in h.stdout


# ---- 7. prefill progress ------------------------------------------------------------------------

def _long_prompt():
    return " ".join(f"word{i}" for i in range(400))


def test_prefill_progress_only_on_a_terminal(geniex_bin):
    piped = run(geniex_bin, "run", "-m", TINY, "--raw", "-p", _long_prompt(), "-n", 1, "-b", 32)
    assert piped.returncode == 0 and "prefill:" not in piped.stderr
    master, slave = pty.openpty()
    try:
        p = subprocess.run([str(geniex_bin), "run", "-m", str(TINY), "--raw", "-p", _long_prompt(),
                            "-n", "1", "-b", "32"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert p.returncode == 0
    assert b"prefill:" in err and b"tokens" in err


# ---- 9. small ones --------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) missing")
def test_threads_follow_the_cpu_affinity(geniex_bin):
    r = subprocess.run(["taskset", "-c", "0", str(geniex_bin), "run", "-m", str(TINY), "--raw",
                        "-p", "hi", "-n", "1", "--json"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "1 thread" in json.loads(r.stdout)["placement"]


def test_inspect_takes_dash_m(geniex_bin):
    a = run(geniex_bin, "inspect", "-m", TINY, "--json")
    b = run(geniex_bin, "inspect", TINY, "--json")
    assert a.returncode == 0 and a.stdout == b.stdout


def test_run_json_names_are_consistent(geniex_bin):
    out, _ = run_json(geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 3, "--temp", 0)
    assert out["prompt_tokens"] == len(out["prompt_token_ids"]) == out["timings"]["prompt_tokens"]
    assert out["generated_tokens"] == len(out["token_ids"]) == out["timings"]["generated_tokens"]


def test_chat_on_a_model_without_its_own_template_says_so(geniex_bin):
    gemma_tiny = REPO / "tests/data/models/tiny-gemma3-q8_0.gguf"
    info = run(geniex_bin, "inspect", "-m", gemma_tiny, "--json")
    if "tokenizer.chat_template" in info.stdout:
        pytest.fail("the tiny Gemma was expected to carry no chat template")
    r = run(geniex_bin, "run", "-m", gemma_tiny, "-p", "hi", "-n", 1)
    assert r.returncode == 0, r.stderr
    assert "no chat template of its own" in r.stderr and "built-in gemma" in r.stderr
    r = run(geniex_bin, "run", "-m", TINY, "-p", "hi", "-n", 1)
    assert r.returncode == 0 and "no chat template of its own" not in r.stderr


def test_gpu_on_a_cpu_opencl_driver_warns(geniex_bin):
    # scripts/setup.sh installs PoCL (a CPU OpenCL driver) and no GPU driver exists here.
    vendors = Path("/etc/OpenCL/vendors")
    icds = [p.read_text().lower() for p in vendors.glob("*.icd")] if vendors.is_dir() else []
    assert icds and all("pocl" in i for i in icds), "expected PoCL as the only OpenCL driver"
    r = run(geniex_bin, "run", "-m", TINY, "--raw", "-p", "hi", "-n", 1, "--device", "gpu")
    assert r.returncode == 0, r.stderr
    assert "warning: --device gpu runs on the OpenCL device" in r.stderr
    assert "not a GPU" in r.stderr
    r = run(geniex_bin, "run", "-m", TINY, "--raw", "-p", "hi", "-n", 1, "--device", "cpu")
    assert "not a GPU" not in r.stderr
