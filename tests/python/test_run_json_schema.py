"""`geniex run --json-schema FILE` on the real Gemma 3 270M: the answer is JSON that an outside
validator (jsonschema) accepts; a schema outside the supported subset is a usage error (exit 2)
naming the keyword, before any model loads."""
from __future__ import annotations

import json
import subprocess

import jsonschema

SCHEMA = {
    "type": "object",
    "properties": {
        "fruit": {"enum": ["apple", "pear", "plum"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 12},
        "ripe": {"type": "boolean"},
        "notes": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 2},
    },
    "required": ["fruit", "count", "ripe", "notes"],
    "additionalProperties": False,
}


def run(geniex_bin, *args):
    return subprocess.run([str(geniex_bin), "run", *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_answer_validates(geniex_bin, gemma_gguf, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    for extra in (["--temp", "0"], ["--temp", "1", "-s", "3"]):
        r = run(geniex_bin, "-m", str(gemma_gguf), "--json-schema", str(path), "-n", "200",
                "-p", "Describe a bowl of fruit.", *extra)
        assert r.returncode == 0, r.stderr
        jsonschema.validate(json.loads(r.stdout), SCHEMA)


def test_unsupported_schema_is_a_usage_error(geniex_bin, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"type": "object", "patternProperties": {"^a": {}}}))
    r = run(geniex_bin, "-m", "/nonexistent.gguf", "--json-schema", str(path), "-p", "x")
    assert r.returncode == 2, r.stderr
    assert "'patternProperties'" in r.stderr and "bad.json" in r.stderr
