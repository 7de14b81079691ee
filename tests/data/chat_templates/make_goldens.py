#!/usr/bin/env python3
"""Renders every template x conversation with Python jinja2 the way transformers'
apply_chat_template does, and writes goldens.json (the expected outputs, or the expected error).

Environment mirrored from transformers (utils/chat_template_utils.py):
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, jinja2.ext.loopcontrols])
  filters["tojson"]  = json.dumps(x, ensure_ascii=False, indent=indent, separators=..., sort_keys=False)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"](fmt) = datetime.now().strftime(fmt)   -- here a fixed date
  render(messages=..., tools=tools or None, documents=None, add_generation_prompt=..., bos_token, eos_token, **extra)

Usage: pip install jinja2==3.1.6 && python3 make_goldens.py
"""
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
PINNED_JINJA2 = "3.1.6"


class GenerationBlock(Extension):
    """{% generation %}...{% endgeneration %} as transformers' AssistantTracker parses it
    (a call block that renders its body), without the assistant-mask bookkeeping."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    if jinja2.__version__ != PINNED_JINJA2:
        sys.exit(f"jinja2 {jinja2.__version__} found; goldens are pinned to jinja2=={PINNED_JINJA2}")
    with open(os.path.join(HERE, "conversations.json"), encoding="utf-8") as f:
        spec = json.load(f)
    now = datetime.datetime.fromisoformat(spec["now"])
    env = make_env(now)
    results = {}
    counts = {}
    for name, t in spec["templates"].items():
        with open(os.path.join(HERE, t["file"]), encoding="utf-8") as f:
            compiled = env.from_string(f.read())
        ok = err = 0
        for conv in spec["conversations"]:
            key = f"{name}/{conv['id']}"
            ctx = {"messages": conv["messages"], "tools": conv["tools"] or None, "documents": None,
                   "add_generation_prompt": conv["add_generation_prompt"],
                   "bos_token": t["bos_token"], "eos_token": t["eos_token"]}
            ctx.update(conv["extra"])
            try:
                results[key] = {"output": compiled.render(**ctx)}
                ok += 1
            except Exception as e:  # noqa: BLE001 - every failure is an expected-error golden
                results[key] = {"error": type(e).__name__, "message": str(e)}
                err += 1
        counts[name] = {"rendered": ok, "errors": err}
    out = {
        "header": {
            "generator": "make_goldens.py",
            "jinja2": jinja2.__version__,
            "python": sys.version.split()[0],
            "now": spec["now"],
            "environment": "ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), "
                           "loopcontrols, generation block, transformers tojson/raise_exception/strftime_now",
            "counts": counts,
        },
        "results": results,
    }
    with open(os.path.join(HERE, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=False)
        f.write("\n")
    for name, c in counts.items():
        print(f"{name:14s} rendered {c['rendered']:3d}  errors {c['errors']:3d}")


if __name__ == "__main__":
    main()
