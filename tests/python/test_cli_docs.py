"""docs/cli.md documents every subcommand and exactly the flags its --help lists."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs/cli.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_text(geniex_bin, *args) -> str:
    r = subprocess.run([str(geniex_bin), *args, "--help"], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return r.stdout


def subcommands(geniex_bin) -> list[str]:
    text = help_text(geniex_bin)
    names, inside = [], False
    for line in text.splitlines():
        if line.strip().lower().startswith("subcommands"):
            inside = True
            continue
        if inside and line.startswith("  ") and line.strip():
            names.append(line.split()[0])
        elif inside and line.strip() == "":
            continue
        elif inside:
            break
    assert names, text
    return names


def help_flags(geniex_bin, cmd) -> set[str]:
    flags = set()
    for line in help_text(geniex_bin, cmd).splitlines():
        s = line.strip()
        if s.startswith("-"):
            head = re.split(r"\s{2,}", s)[0]  # the names column, not the description
            flags |= set(FLAG.findall(head))
    return flags - {"--help"}


def doc_sections() -> dict[str, str]:
    text = DOC.read_text()
    parts = re.split(r"^## geniex (\S+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_subcommand_has_a_section(geniex_bin):
    sections = doc_sections()
    missing = [c for c in subcommands(geniex_bin) if c not in sections]
    assert not missing, f"docs/cli.md has no '## geniex NAME' section for {missing}"
    extra = [c for c in sections if c not in subcommands(geniex_bin)]
    assert not extra, f"docs/cli.md documents subcommands that do not exist: {extra}"


def test_documented_flags_equal_help_flags(geniex_bin):
    sections = doc_sections()
    problems = []
    for cmd in subcommands(geniex_bin):
        want = help_flags(geniex_bin, cmd)
        have = set(FLAG.findall(sections.get(cmd, ""))) - {"--help"}
        if want - have:
            problems.append(f"{cmd}: undocumented {sorted(want - have)}")
        if have - want:
            problems.append(f"{cmd}: documented but not in --help {sorted(have - want)}")
    assert not problems, "\n".join(problems)


def test_exit_codes_are_documented():
    text = DOC.read_text()
    for code in ("0", "1", "2"):
        assert re.search(rf"^\|\s*{code}\s*\|", text, flags=re.M), f"exit code {code} missing"
