"""`geniex serve` request defaults, model names, visibility (issue 28, items 2 and 8): the sampling
flags of `run` set what a request gets for a field it omits (the request's own value wins), GET
/props reports them with the chat template's origin, any "model" value means the served model,
one access-log line per request goes to stderr (never the content; off with --no-access-log),
a base model without a chat template is named at startup, and bad flags are usage errors before
the model loads."""
from __future__ import annotations

import re
import subprocess
import time

import pytest
import requests

from conftest import start_server

ACCESS = re.compile(r"^geniex serve: access: (\S+) (\S+) (\d{3}) in=(\d+|-) out=(\d+|-) "
                    r"ms=(\d+\.\d|-)( client-closed)?$")


def post(srv, path, body):
    return requests.post(srv.base_url + path, json=body, timeout=120)


def stop_and_stderr(srv) -> str:
    assert srv.stop() == 0
    return "".join(srv.stderr_lines())


@pytest.fixture(scope="module")
def defaults_server(geniex_bin, gemma_gguf):
    """Defaults that show in every reply: 5 tokens, never stopping early, seed 7, a stop string."""
    srv = start_server(geniex_bin, gemma_gguf, "-n", "5", "--ignore-eos", "--seed", "7",
                       "--temp", "1.0", "--top-k", "20", "--stop", "NEVER-SEEN",
                       "--parallel", "1")
    yield srv
    srv.stop()


def test_props_report_the_flags(defaults_server):
    r = requests.get(defaults_server.url + "/props", timeout=10)
    assert r.status_code == 200, r.text
    d = r.json()["default_generation_settings"]
    assert d["max_tokens"] == 5 and d["ignore_eos"] is True and d["seed"] == 7
    assert d["temperature"] == 1.0 and d["top_k"] == 20 and d["stop"] == ["NEVER-SEEN"]
    assert d["top_p"] == 0.95 and d["min_p"] == 0.05  # run's defaults where no flag was given


def test_omitted_fields_take_the_server_defaults(defaults_server):
    for path, body in [("/completions", {"prompt": "Once upon a time"}),
                       ("/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]})]:
        r = post(defaults_server, path, {"model": defaults_server.model_id, **body})
        assert r.status_code == 200, r.text
        j = r.json()
        # -n 5 with --ignore-eos: exactly five tokens, whatever the model would rather do.
        assert j["usage"]["completion_tokens"] == 5, j
        assert j["choices"][0]["finish_reason"] == "length"
    # --seed 7 at temperature 1: the same text every time, and the same as seed 7 sent explicitly.
    body = {"model": defaults_server.model_id, "prompt": "Once upon a time"}
    texts = {post(defaults_server, "/completions", body).json()["choices"][0]["text"]
             for _ in range(3)}
    assert len(texts) == 1, texts
    explicit = post(defaults_server, "/completions", {**body, "seed": 7}).json()
    assert explicit["choices"][0]["text"] in texts


def test_the_request_s_own_values_win(defaults_server):
    body = {"model": defaults_server.model_id, "prompt": "Once upon a time", "max_tokens": 9,
            "ignore_eos": True}
    j = post(defaults_server, "/completions", body).json()
    assert j["usage"]["completion_tokens"] == 9, j
    seeded = {post(defaults_server, "/completions", {**body, "seed": s}).json()["choices"][0]["text"]
              for s in range(1, 7)}
    assert len(seeded) > 1, "a request's seed did not override the server's --seed"


def test_default_server_uses_run_s_sampling_defaults(gemma_server):
    r = requests.get(gemma_server.url + "/props", timeout=10)
    assert r.status_code == 200, r.text
    p = r.json()
    assert p["model"] == gemma_server.model_id and p["n_ctx"] > 0 and p["total_slots"] == 2
    d = p["default_generation_settings"]
    assert (d["temperature"], d["top_k"], d["top_p"], d["min_p"]) == (0.8, 40, 0.95, 0.05)
    assert d["max_tokens"] == -1 and d["seed"] == -1 and d["stop"] == []


def test_any_model_name_means_the_served_model(gemma_server):
    msgs = [{"role": "user", "content": "Hi"}]
    for name in ("gpt-4o", "", "llama3"):
        r = post(gemma_server, "/chat/completions",
                 {"model": name, "messages": msgs, "max_tokens": 2})
        assert r.status_code == 200, r.text
        assert r.json()["model"] == gemma_server.model_id
    r = post(gemma_server, "/completions", {"prompt": "Hi", "max_tokens": 2})  # no "model" at all
    assert r.status_code == 200, r.text
    assert r.json()["model"] == gemma_server.model_id


def test_base_model_without_template_is_named_at_startup(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "1", "--no-access-log")
    props = requests.get(srv.url + "/props", timeout=10).json()
    err = stop_and_stderr(srv)
    assert props["chat_template_origin"] == "builtin:gemma3"
    notes = [ln for ln in err.splitlines() if "no chat template of its own" in ln]
    assert len(notes) == 1, err
    assert srv.model_id in notes[0] and "built-in gemma3 template" in notes[0]


def test_access_log_one_line_per_request_without_content(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "1")
    secret = "PURPLE-ELEPHANT-4711"
    t0 = time.monotonic()
    requests.get(srv.url + "/health", timeout=10)
    whole = post(srv, "/chat/completions", {"messages": [{"role": "user", "content": secret}],
                                            "max_tokens": 3}).json()
    with requests.post(srv.base_url + "/completions", stream=True, timeout=60,
                       json={"prompt": secret, "max_tokens": 4, "stream": True,
                             "stream_options": {"include_usage": True}}) as r:
        lines = [ln for ln in r.iter_lines() if ln]
    streamed_usage = [ln for ln in lines if b'"usage":{' in ln]
    assert post(srv, "/chat/completions", {"messages": "nope"}).status_code == 400
    assert requests.get(srv.url + "/v1/nothing?q=" + secret, timeout=10).status_code == 404
    elapsed_ms = (time.monotonic() - t0) * 1000
    err = stop_and_stderr(srv)
    assert secret not in err
    log = [m.groups() for m in map(ACCESS.match, err.splitlines()) if m]

    def only(method, path, status):
        found = [e for e in log if e[:3] == (method, path, status)]
        assert len(found) == 1, (method, path, status, err)
        return found[0]

    # Startup polled /health too; each of the others was sent once.
    assert [e for e in log if e[:3] == ("GET", "/health", "200")][-1][3:5] == ("-", "-")
    chat = only("POST", "/v1/chat/completions", "200")
    assert chat[3:5] == (str(whole["usage"]["prompt_tokens"]),
                         str(whole["usage"]["completion_tokens"]))
    stream = only("POST", "/v1/completions", "200")
    assert stream[4] == "4" and stream[3] != "-", stream
    assert streamed_usage and b'"completion_tokens":4' in streamed_usage[0]
    assert only("POST", "/v1/chat/completions", "400")[3:5] == ("-", "-")
    only("GET", "/v1/nothing", "404")
    for entry in log:
        assert entry[5] != "-" and 0 <= float(entry[5]) <= elapsed_ms + 60000, entry
    assert float(chat[5]) <= elapsed_ms


def test_no_access_log_flag(geniex_bin, gemma_gguf):
    srv = start_server(geniex_bin, gemma_gguf, "--parallel", "1", "--no-access-log")
    assert post(srv, "/completions", {"prompt": "Hi", "max_tokens": 2}).status_code == 200
    err = stop_and_stderr(srv)
    assert "access:" not in err, err


def test_help_documents_defaults_and_the_access_log_format(geniex_bin):
    r = subprocess.run([str(geniex_bin), "serve", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for flag in ("--temp", "--top-k", "--min-p", "-s,--seed", "--no-access-log"):
        assert flag in r.stdout, flag
    assert "access: METHOD PATH STATUS in=PROMPT_TOKENS out=COMPLETION_TOKENS ms=" in r.stdout


@pytest.mark.parametrize("args,names", [
    (["--port", "70000"], "--port"),
    (["--port", "-1"], "--port"),
    (["--parallel", "0"], "--parallel"),
    (["--queue", "-1"], "--queue"),
    (["--max-body-mb", "0"], "--max-body-mb"),
    (["--temp", "-1"], "--temp"),
    (["--top-p", "0"], "--top-p"),
    (["--min-p", "2"], "--min-p"),
    (["-n", "-5"], "-n/--max-tokens"),
    (["-s", "-7"], "-s/--seed"),
    (["--device", "quantum"], "--device"),
    (["--ctx", "-1"], "--ctx"),
])
def test_bad_flags_are_usage_errors_before_the_model_loads(geniex_bin, tmp_path, args, names):
    # The model does not exist: a check that ran after loading would report the file instead.
    missing = tmp_path / "absent.gguf"
    t0 = time.monotonic()
    r = subprocess.run([str(geniex_bin), "serve", "-m", str(missing), *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert names in r.stderr and "absent.gguf" not in r.stderr, r.stderr
    assert "not expected" not in r.stderr, r.stderr  # the flag exists and its value is checked
    assert "listening" not in r.stdout
    assert time.monotonic() - t0 < 10
