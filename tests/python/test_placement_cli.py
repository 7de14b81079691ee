"""Placement through the CLI: `--device npu` on the reference NPU plugin (stages split between
the CPU and the NPU), `--explain-placement`, `bench --profile`, and the real Gemma 3 270M's
greedy agreement with llama.cpp when its layers run on the int8 reference NPU."""
import json

from conftest import REPO, run

TINY = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"
GOLDEN = json.loads((REPO / "tests/data/models/gemma3_270m_greedy.json").read_text())


def test_explain_placement_shows_the_table_and_the_split(geniex_bin):
    r = run([geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 4, "--temp", 0,
             "--device", "npu", "--explain-placement", "-v"])
    assert r.returncode == 0, r.stderr
    err = r.stderr
    assert "units in preference order (npu): npu(ref: reference NPU (host, int8)) [npu]" in err
    # The NPU has no Embedding: that stage stays on the CPU, with the reason.
    assert "Embedding / Q8_0 I32:  npu(ref: reference NPU (host, int8))=unsupported" in err
    assert "MatMul / Q8_0 F32:  npu(ref: reference NPU (host, int8))=native" in err
    assert "  embedding -> cpu(" in err
    assert "  layer 0 .. output -> npu(ref: reference NPU (host, int8))" in err
    # Prompts prefill in the NPU's static 128-token chunks.
    assert "== prefill step (128 tokens)" in err
    assert "static shapes: steps padded to 1/128 tokens; prompts prefill in chunks of 128" in err


def test_bench_profile_reports_stages_units_and_copies(geniex_bin):
    r = run([geniex_bin, "bench", "-m", TINY, "-p", 40, "-n", 6, "-r", 2, "-t", 1, "--device",
             "npu", "--profile", "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    for test in ("pp", "tg"):
        p = j["profile"][test]
        units = {s["device"].split("(")[0] for s in p["stages"]}
        assert units == {"cpu", "npu"}, p
        emb = next(s for s in p["stages"] if s["stages"] == "embedding")
        layers = next(s for s in p["stages"] if s["device"].startswith("npu"))
        assert emb["runs"] > 0 and emb["ms"] > 0 and layers["ms"] > 0
        # The embedding's output is the only value crossing to the NPU.
        assert emb["bytes_out"] > 0 and layers["bytes_in"] == emb["bytes_out"]
        assert p["busy_ms"] > 0 and p["wall_ms"] > 0
    # One boundary buffer per cut graph (prefill and decode shapes), allocated once.
    assert j["profile"]["boundary_bytes"] >= 40 * 4 * 64
    assert j["profile"]["fallbacks"] == 0


def test_offload_layers_and_ngl_keep_the_first_layers_on_the_cpu(geniex_bin):
    """--offload-layers 1: the tiny llama's last layer and head on the NPU; -ngl 2 is the same
    split (llama.cpp counts the head as a layer); 0 keeps everything on the CPU under --device
    npu, with the CPU's tokens."""
    def run_explain(*flags):
        r = run([geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 4, "--temp", 0,
                 "--device", "npu", "--explain-placement", "--json", *flags])
        assert r.returncode == 0, r.stderr
        return r.stderr, json.loads(r.stdout)["token_ids"]

    err, _ = run_explain("--offload-layers", 1)
    assert "  embedding .. layer 1 -> cpu(" in err
    assert "  layer 2 .. output -> npu(ref: reference NPU (host, int8))" in err
    assert "  note: embedding, layer 0 .. layer 1 on the CPU: --offload-layers 1" in err
    assert run_explain("-ngl", 2)[0] == err
    err0, toks0 = run_explain("--offload-layers", 0)
    assert "  embedding .. output -> cpu(" in err0 and "-> npu(" not in err0
    # Nothing on the NPU: steps are not padded to its static 128-token chunks.
    assert "== prefill step (128 tokens)" in err and "== prefill step (128 tokens)" not in err0
    cpu = run([geniex_bin, "run", "-m", TINY, "--raw", "-p", "Hello", "-n", 4, "--temp", 0,
               "--device", "cpu", "--json"])
    assert cpu.returncode == 0, cpu.stderr
    assert toks0 == json.loads(cpu.stdout)["token_ids"]
    # -ngl 1 (llama.cpp: the head alone) offloads nothing here, and says so; "all" is no limit.
    err1, _ = run_explain("-ngl", 1)
    assert "note: -ngl 1 offloads nothing here" in err1 and "-> npu(" not in err1
    err_all, _ = run_explain("-ngl", "all")
    assert "  layer 0 .. output -> npu(ref: reference NPU (host, int8))" in err_all
    assert "--offload-layers" not in err_all
    both = run([geniex_bin, "run", "-m", TINY, "-p", "x", "-ngl", 2, "--offload-layers", 1])
    assert both.returncode == 2
    assert "--offload-layers and -ngl/--n-gpu-layers both given" in both.stderr


def test_unknown_device_is_a_usage_error(geniex_bin):
    r = run([geniex_bin, "run", "-m", TINY, "-p", "x", "--device", "tpu"])
    assert r.returncode != 0
    assert "unknown device 'tpu'" in r.stderr


def test_gemma_on_the_reference_npu_tracks_llamacpp(geniex_bin, gemma_gguf):
    """The int8 reference NPU (int8 weights per channel, int8 activations per token) runs every
    layer and the LM head; llama.cpp's greedy continuations are the judge. Measured: 3 of 5
    identical 48-token continuations (CPU path: 4 of 5), the first token right in all 5."""
    same = first = 0
    cases = [c for c in GOLDEN["cases"] if c["kind"] == "raw"]
    for c in cases:
        n = len(c["generated_ids"])
        r = run([geniex_bin, "run", "-m", gemma_gguf, "--raw", "-p", c["prompt"], "--temp", 0,
                 "-n", n, "--json", "--device", "npu"])
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)["token_ids"]
        same += got == c["generated_ids"]
        first += got[0] == c["generated_ids"][0]
    print(f"[ measure ] reference NPU vs llama.cpp: {same}/{len(cases)} identical, "
          f"first token {first}/{len(cases)}")
    assert first == len(cases)
    assert same >= 3
