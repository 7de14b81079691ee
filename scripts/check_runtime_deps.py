#!/usr/bin/env python3
"""Checks that the Dockerfile's runtime stage installs exactly the Debian packages holding the
shared libraries the installed GenieX links.

    scripts/check_runtime_deps.py PREFIX [--dockerfile Dockerfile]

PREFIX is a `cmake --install` tree. The files the runtime stage copies (bin/geniex and
lib/geniex/plugins/**.so) are read with objdump (their DT_NEEDED libraries), each library is
resolved with ldd and mapped to its package with `dpkg -S`. The runtime stage is the Dockerfile's
last FROM; its package list is every `apt-get install` argument that is not an option. Exit 0
when the two sets are equal, 1 (with the difference) otherwise, 2 for bad input.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import shlex
import subprocess
import sys


def needed(path: pathlib.Path) -> list[str]:
    out = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True, check=True).stdout
    return re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)


def resolved(path: pathlib.Path) -> dict[str, str]:
    """ldd's answer: library name -> path."""
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if m:
            found[m.group(1)] = m.group(2)
        else:
            m = re.match(r"\s*(/\S+)\s+\(", line)  # the dynamic loader, by path
            if m:
                found[pathlib.Path(m.group(1)).name] = m.group(1)
    return found


def package_of(lib_path: str) -> str | None:
    """The package owning a file; tries the path as given, resolved, and across the /usr merge."""
    p = pathlib.Path(lib_path)
    candidates = [str(p), str(p.resolve())]
    for c in list(candidates):
        if c.startswith("/usr/lib/"):
            candidates.append(c[len("/usr"):])
        elif c.startswith("/lib/") or c.startswith("/lib64/"):
            candidates.append("/usr" + c)
    for c in candidates:
        r = subprocess.run(["dpkg", "-S", c], capture_output=True, text=True)
        if r.returncode == 0:
            # "libfoo1:amd64: /usr/lib/..." (diversions print other lines first).
            for line in r.stdout.splitlines():
                if ": " in line and not line.startswith("diversion"):
                    return line.split(": ", 1)[0].split(",")[0].split(":")[0].strip()
    return None


def linked_packages(prefix: pathlib.Path) -> tuple[dict[str, set[str]], list[str]]:
    files = [prefix / "bin" / "geniex"]
    files += sorted((prefix / "lib" / "geniex" / "plugins").rglob("*.so"))
    packages: dict[str, set[str]] = {}
    problems = []
    for f in files:
        if not f.exists():
            problems.append(f"{f}: missing (not an installed tree?)")
            continue
        paths = resolved(f)
        for lib in needed(f):
            path = paths.get(lib)
            if path is None or path == "not":
                problems.append(f"{f.relative_to(prefix)}: {lib} does not resolve")
                continue
            pkg = package_of(path)
            if pkg is None:
                problems.append(f"{f.relative_to(prefix)}: {lib} ({path}) is in no Debian package")
                continue
            packages.setdefault(pkg, set()).add(lib)
    return packages, problems


def runtime_packages(dockerfile: pathlib.Path) -> set[str]:
    text = dockerfile.read_text()
    # Logical lines: backslash continuations joined, comments dropped.
    lines = []
    for raw in re.sub(r"\\\n", " ", text).splitlines():
        if not raw.lstrip().startswith("#"):
            lines.append(raw)
    stages = [i for i, line in enumerate(lines) if re.match(r"\s*FROM\s", line, re.I)]
    if not stages:
        raise SystemExit(f"{dockerfile}: no FROM")
    pkgs: set[str] = set()
    for line in lines[stages[-1]:]:
        if not re.match(r"\s*RUN\s", line, re.I):
            continue
        for command in re.split(r"&&|;|\|\|", line):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                args = words[words.index("install") + 1:]
                pkgs |= {w for w in args if not w.startswith("-")}
    return pkgs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefix", type=pathlib.Path, help="a cmake --install tree")
    ap.add_argument("--dockerfile", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parents[1] / "Dockerfile")
    a = ap.parse_args()
    if not (a.prefix / "bin" / "geniex").exists():
        print(f"check_runtime_deps: {a.prefix}/bin/geniex not found", file=sys.stderr)
        return 2
    linked, problems = linked_packages(a.prefix)
    listed = runtime_packages(a.dockerfile)
    for p in problems:
        print(f"check_runtime_deps: {p}", file=sys.stderr)
    missing = sorted(set(linked) - listed)
    extra = sorted(listed - set(linked))
    for pkg in missing:
        print(f"check_runtime_deps: {a.dockerfile.name} lacks {pkg} "
              f"(holds {', '.join(sorted(linked[pkg]))})", file=sys.stderr)
    for pkg in extra:
        print(f"check_runtime_deps: {a.dockerfile.name} installs {pkg}, which nothing links",
              file=sys.stderr)
    if problems or missing or extra:
        return 1
    print(f"check_runtime_deps: the runtime stage installs the {len(listed)} packages the binary "
          f"and plugins link: {' '.join(sorted(listed))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
