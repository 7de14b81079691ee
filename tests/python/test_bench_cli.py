"""`geniex bench`: the JSON report's fields, errors and usage checks (speed is never asserted)."""
import json

from conftest import REPO, run

TINY = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"


def test_bench_json_fields(geniex_bin):
    r = run([geniex_bin, "bench", "-m", TINY, "-p", 16, "-n", 8, "-r", 2, "-t", 1, "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["model"] == str(TINY)
    assert j["architecture"] == "llama"
    assert j["threads"] == 1
    assert j["repetitions"] == 2
    assert j["n_params"] > 0 and j["file_bytes"] > 0 and j["load_ms"] > 0
    assert j["n_ctx"] >= 16 + 1
    assert j["peak_rss_bytes"] > 0
    for test, n in (("pp", 16), ("tg", 8)):
        s = j[test]
        assert s["n_tokens"] == n
        assert len(s["samples_ms"]) == 2 and len(s["samples_tok_s"]) == 2
        assert all(v > 0 for v in s["samples_ms"] + s["samples_tok_s"])
        assert s["median_ms"] > 0 and s["median_tok_s"] > 0
        for ms, tps in zip(s["samples_ms"], s["samples_tok_s"]):
            assert abs(tps - n * 1000.0 / ms) <= 1e-6 * tps
        assert min(s["samples_tok_s"]) <= s["median_tok_s"] <= max(s["samples_tok_s"])
    t = j["ttft"]
    assert t["n_prompt"] == 16
    assert len(t["samples_ms"]) == 2 and all(v > 0 for v in t["samples_ms"]) and t["median_ms"] > 0
    # TTFT = prefill + one sample, so never below the prefill time of the same run.
    for ttft, pp in zip(t["samples_ms"], j["pp"]["samples_ms"]):
        assert ttft >= pp


def test_bench_parallel_tg_counts_every_stream(geniex_bin):
    # -P 3: three generations of 8 tokens at once; tok/s is the aggregate of all 24.
    r = run([geniex_bin, "bench", "-m", TINY, "-p", 0, "-n", 8, "-r", 2, "-t", 1, "-P", 3,
             "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["parallel"] == 3 and j["pp"] is None
    s = j["tg"]
    assert s["n_tokens"] == 24 and len(s["samples_ms"]) == 2
    for ms, tps in zip(s["samples_ms"], s["samples_tok_s"]):
        assert ms > 0 and abs(tps - 24 * 1000.0 / ms) <= 1e-6 * tps
    t = run([geniex_bin, "bench", "-m", TINY, "-p", 0, "-n", 4, "-r", 1, "-t", 1, "-P", 2])
    assert t.returncode == 0, t.stderr
    assert "| tg4x2 " in t.stdout


def test_bench_text_table(geniex_bin):
    r = run([geniex_bin, "bench", "-m", TINY, "-p", 8, "-n", 4, "-r", 3, "-t", 1])
    assert r.returncode == 0, r.stderr
    assert "| pp8 " in r.stdout and "| tg4 " in r.stdout and "| ttft8 " in r.stdout
    assert "rep 3" in r.stdout and "peak RSS" in r.stdout


def test_bench_skips_a_test_given_0(geniex_bin):
    r = run([geniex_bin, "bench", "-m", TINY, "-p", 0, "-n", 4, "-r", 1, "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["pp"] is None and j["ttft"] is None
    assert len(j["tg"]["samples_ms"]) == 1


def test_bench_bad_file(geniex_bin, tmp_path):
    missing = tmp_path / "missing.gguf"
    r = run([geniex_bin, "bench", "-m", missing, "-r", 1])
    assert r.returncode == 1
    assert str(missing) in r.stderr
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all" * 10)
    r = run([geniex_bin, "bench", "-m", junk, "-r", 1, "--json"])
    assert r.returncode == 1
    assert "junk.gguf" in r.stderr and r.stdout == ""


def test_bench_usage_errors(geniex_bin):
    for args in (["-r", 0], ["-r", -1], ["-p", -5], ["-p", 0, "-n", 0], ["--device", "tpu"],
                 ["-P", 0], ["-P", 2, "-d", 8]):
        r = run([geniex_bin, "bench", "-m", TINY, *args])
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip(), args


def test_bench_depth_for_kv_and_recurrent_state_models(geniex_bin):
    # -d 70: tg after 70 cached tokens, every repetition (llama-bench -d). LFM2's convolution
    # state cannot be cut back like a KV cache (only to a block snapshot), which made every
    # repetition after the first fail ("found only 64 tokens cached").
    for model, arch in ((TINY, "llama"), (REPO / "tests" / "data" / "models" / "tiny-lfm2-q8_0.gguf",
                                          "lfm2")):
        r = run([geniex_bin, "bench", "-m", model, "-p", 8, "-n", 4, "-r", 3, "-t", 1, "-d", 70,
                 "--json"])
        assert r.returncode == 0, (arch, r.stderr)
        j = json.loads(r.stdout)
        assert j["architecture"] == arch and j["depth"] == 70 and j["n_ctx"] >= 70 + 4
        assert len(j["tg"]["samples_ms"]) == 3 and all(v > 0 for v in j["tg"]["samples_ms"])
        assert len(j["pp"]["samples_ms"]) == 3
