"""`cmake --install` of the build, and programs built against the installed tree.

The installed tree (a temporary prefix) holds bin/geniex, the public headers, libgeniex.a and
libgeniex.so (exporting only the public API), the NPU plugins under lib/geniex/plugins, the CMake
package and geniex.pc. examples/cmake-consumer is built with find_package(geniex) (shared and
static) and examples/c-consumer with pkg-config (shared and --static); each must print the same
greedy continuation as the installed `geniex run`.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, REPO

MODEL = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"
PROMPT = "The capital of France is"
TOKENS = "12"


def install_to(prefix: pathlib.Path) -> pathlib.Path:
    """cmake --install of $GENIEX_BUILD_DIR into `prefix` (the libraries are ALL targets)."""
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def clean_env(**extra) -> dict:
    """The environment without GENIEX_* settings (tests choose their own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GENIEX_")}
    env.update(extra)
    return env


def sh(cmd, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("env", clean_env())
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="surrogateescape",
                       timeout=300, **kw)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> pathlib.Path:
    return install_to(tmp_path_factory.mktemp("prefix"))


@pytest.fixture(scope="module")
def reference_text(prefix) -> str:
    """The installed CLI's greedy continuation (what every consumer must print)."""
    r = sh([prefix / "bin" / "geniex", "run", "-m", MODEL, "--raw", "-p", PROMPT, "-n", TOKENS,
            "--temp", "0", "--device", "cpu", "-t", "2"])
    assert r.stdout.strip(), r.stderr
    return r.stdout


def test_layout(prefix):
    for rel in ["bin/geniex", "include/geniex/geniex.h", "include/geniex/geniex.hpp",
                "include/geniex/status.h", "lib/libgeniex.a", "lib/libgeniex.so",
                "lib/cmake/geniex/geniexConfig.cmake", "lib/cmake/geniex/geniexConfigVersion.cmake",
                "lib/pkgconfig/geniex.pc", "lib/geniex/plugins/libgeniex_npu_ref.so"]:
        assert (prefix / rel).exists(), rel
    so = prefix / "lib" / "libgeniex.so"
    soname = sh(["objdump", "-p", so]).stdout
    assert re.search(r"SONAME\s+libgeniex\.so\.0\b", soname), soname
    # The CLI reports the project's version.
    assert sh([prefix / "bin" / "geniex", "--version"]).stdout.startswith("geniex ")


def public_names() -> tuple[set[str], set[str]]:
    """Classes/structs and free functions declared in the public C++ headers."""
    classes, functions = set(), set()
    for h in ["geniex.hpp", "status.h"]:
        text = (REPO / "include" / "geniex" / h).read_text()
        classes |= set(re.findall(r"^(?:class|struct)\s+(?:\[\[\w+\]\]\s+)?(\w+)\s*[{:]", text, re.M))
        functions |= set(re.findall(r"^[\w:<>, ]+?\b(\w+)\((?:[^;{]*)\);", text, re.M))
    return classes, functions


def test_shared_library_exports_only_the_public_api(prefix):
    so = prefix / "lib" / "libgeniex.so"
    out = sh(["nm", "-D", "--defined-only", so]).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    demangled = sh(["c++filt"], input="\n".join(names)).stdout.splitlines()
    classes, functions = public_names()
    assert {"Model", "ModelBuilder", "Status", "GenerationConfig"} <= classes
    assert {"parse_kv_cache_type", "stop_reason_name"} <= functions
    c_abi = set(re.findall(r"GENIEX_API [^;(]*?\b(geniex_\w+)\(",
                           (REPO / "include" / "geniex" / "geniex.h").read_text()))
    assert len(c_abi) > 20
    bad = []
    exported_c = set()
    for raw, name in zip(names, demangled):
        if raw.startswith("geniex_"):
            exported_c.add(raw)
            continue
        m = re.match(r"geniex::(\w+)", name)
        ok = m is not None and (m.group(1) in classes or m.group(1) in functions)
        # Model's private half stays hidden.
        if not ok or name.startswith("geniex::Model::Impl::"):
            bad.append(name)
    assert not bad, f"libgeniex.so exports {len(bad)} non-public symbols, e.g. {bad[:10]}"
    missing = c_abi - exported_c
    assert not missing, f"C ABI functions not exported: {sorted(missing)}"
    assert any(n.startswith("geniex::ModelBuilder::build") for n in demangled)


def test_installed_cli_finds_its_plugins(prefix, tmp_path):
    """The installed binary finds the NPU plugins under <prefix>/lib/geniex/plugins, also after
    the whole tree is moved (nothing points back into the build tree)."""
    moved = tmp_path / "elsewhere"
    shutil.copytree(prefix, moved, symlinks=True)
    for root in (prefix, moved):
        r = sh([root / "bin" / "geniex", "run", "-m", MODEL, "--raw", "-p", "Hi", "-n", "2",
                "--temp", "0", "--device", "npu", "--explain-placement", "-t", "1"])
        text = r.stdout + r.stderr
        assert re.search(r"layer 0 .. output -> npu\(ref:", text), text
    # Without the plugins folder the reference unit is gone: the placement said so for a reason.
    shutil.rmtree(moved / "lib" / "geniex" / "plugins")
    r = subprocess.run([str(moved / "bin" / "geniex"), "run", "-m", str(MODEL), "--raw", "-p", "Hi",
                        "-n", "2", "--temp", "0", "--device", "npu", "--explain-placement", "-t", "1"],
                       capture_output=True, text=True, timeout=120, env=clean_env())
    assert "npu(ref:" not in r.stdout + r.stderr


@pytest.mark.parametrize("static", [False, True], ids=["shared", "static"])
def test_cmake_consumer(prefix, reference_text, tmp_path, static):
    build = tmp_path / "consumer"
    sh(["cmake", "-S", REPO / "examples" / "cmake-consumer", "-B", build, "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix}",
        f"-DGENIEX_USE_STATIC_LIBS={'ON' if static else 'OFF'}"])
    sh(["cmake", "--build", build])
    exe = build / "consumer"
    linked = sh(["ldd", exe]).stdout
    assert ("libgeniex.so" in linked) != static, linked
    r = sh([exe, MODEL, PROMPT, TOKENS])
    assert r.stdout == reference_text


@pytest.mark.parametrize("static", [False, True], ids=["shared", "static"])
def test_pkg_config_c_consumer(prefix, reference_text, tmp_path, static):
    env = clean_env(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    cflags = sh(["pkg-config", "--cflags", "geniex"], env=env).stdout.split()
    if static:
        # libgeniex.a by name, then the private dependencies the .pc declares.
        libs = sh(["pkg-config", "--static", "--libs", "geniex"], env=env).stdout.split()
        libs = ["-l:libgeniex.a" if f == "-lgeniex" else f for f in libs]
    else:
        libs = sh(["pkg-config", "--libs", "geniex"], env=env).stdout.split()
        libs.append(f"-Wl,-rpath,{prefix / 'lib'}")
    exe = tmp_path / "c-consumer"
    sh(["cc", "-std=c11", "-Wall", "-Werror", REPO / "examples" / "c-consumer" / "main.c", *cflags,
        *libs, "-o", exe], env=env)
    linked = sh(["ldd", exe]).stdout
    assert ("libgeniex.so" in linked) != static, linked
    r = sh([exe, MODEL, PROMPT, TOKENS])
    assert r.stdout == reference_text


def test_shared_library_finds_plugins_beside_itself(prefix, tmp_path):
    """A program linked with libgeniex.so (not the geniex CLI) loads the NPU plugins from
    <libdir>/geniex/plugins: glibc's loader trace shows where the plugin came from."""
    env = clean_env(PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = sh(["pkg-config", "--cflags", "--libs", "geniex"], env=env).stdout.split()
    exe = tmp_path / "c-consumer"
    sh(["cc", REPO / "examples" / "c-consumer" / "main.c", *flags,
        f"-Wl,-rpath,{prefix / 'lib'}", "-o", exe], env=env)
    r = sh([exe, MODEL, "Hi", "2", "npu"], env=clean_env(LD_DEBUG="files"))
    loaded = set(re.findall(r"file=(\S*libgeniex_npu_\S*\.so)", r.stderr))
    assert loaded == {str(prefix / "lib" / "geniex" / "plugins" / "libgeniex_npu_ref.so")}, loaded


def test_cmake_package_without_the_static_dependencies(prefix, tmp_path):
    """Where the -dev packages of libgeniex.a's dependencies are absent (pkg-config finds none),
    find_package(geniex) still gives the shared library, and asking for the static one says
    what is missing."""
    env = clean_env(PKG_CONFIG_LIBDIR=str(tmp_path / "empty"), PKG_CONFIG_PATH="")
    build = tmp_path / "shared"
    sh(["cmake", "-S", REPO / "examples" / "cmake-consumer", "-B", build, "-G", "Ninja",
        f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    sh(["cmake", "--build", build], env=env)
    r = subprocess.run(["cmake", "-S", str(REPO / "examples" / "cmake-consumer"), "-B",
                        str(tmp_path / "static"), "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
                        "-DGENIEX_USE_STATIC_LIBS=ON"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode != 0
    said = " ".join(r.stderr.split())
    assert "libgeniex.a needs libpcre2-8, icu-uc, libjpeg, stb, libwebp, not found" in said, said
