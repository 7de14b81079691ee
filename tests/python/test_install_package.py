"""cpack's .tar.gz and .deb of the installed tree. The .deb goes onto a bare Debian 12 root
(mmdebstrap minbase, cached by scripts/make_debian_root.sh) with apt resolving only its declared
Depends, and `geniex run` must work there: the proof that the dependency list is complete."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import BUILD, REPO
from test_install import clean_env, install_to

MODEL = REPO / "tests" / "data" / "models" / "tiny-llama-q8_0.gguf"
PROMPT = "The capital of France is"
RUN = ["run", "--raw", "-p", PROMPT, "-n", "12", "--temp", "0", "-t", "1"]


def sh(cmd, timeout=600, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       errors="surrogateescape", timeout=timeout, **kw)
    assert r.returncode == 0, f"{cmd} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, pathlib.Path]:
    out = tmp_path_factory.mktemp("packages")
    sh(["cpack", "--config", BUILD.resolve() / "CPackConfig.cmake", "-B", out], cwd=out)
    found = {"tgz": sorted(out.glob("geniex-*.tar.gz")), "deb": sorted(out.glob("geniex_*.deb"))}
    assert len(found["tgz"]) == 1 and len(found["deb"]) == 1, list(out.iterdir())
    return {k: v[0] for k, v in found.items()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    prefix = install_to(tmp_path_factory.mktemp("prefix"))
    return sh([prefix / "bin" / "geniex", *RUN, "-m", MODEL, "--device", "cpu"],
              env=clean_env()).stdout


def test_tarball_is_a_relocatable_install_tree(packages, reference, tmp_path):
    with tarfile.open(packages["tgz"]) as t:
        names = t.getnames()
        top = names[0].split("/")[0]
        for rel in ["bin/geniex", "include/geniex/geniex.hpp", "lib/libgeniex.a",
                    "lib/libgeniex.so", "lib/pkgconfig/geniex.pc",
                    "lib/cmake/geniex/geniexConfig.cmake", "lib/geniex/plugins/libgeniex_npu_ref.so"]:
            assert f"{top}/{rel}" in names, rel
        t.extractall(tmp_path)
    exe = tmp_path / top / "bin" / "geniex"
    assert sh([exe, *RUN, "-m", MODEL, "--device", "cpu"], env=clean_env()).stdout == reference
    r = sh([exe, *RUN, "-m", MODEL, "--device", "npu", "--explain-placement"], env=clean_env())
    assert "-> npu(ref:" in r.stdout + r.stderr


def deb_field(deb: pathlib.Path, field: str) -> str:
    return sh(["dpkg-deb", "-f", deb, field]).stdout.strip()


def test_deb_depends_on_what_the_binaries_link(packages, tmp_path):
    deb = packages["deb"]
    assert deb_field(deb, "Package") == "geniex"
    depends = {d.strip().split(" ")[0] for d in deb_field(deb, "Depends").split(",")}
    # The same set the Dockerfile's runtime stage installs (both come from the linked libraries).
    prefix = install_to(tmp_path / "prefix")
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import check_runtime_deps
    finally:
        sys.path.pop(0)
    linked, problems = check_runtime_deps.linked_packages(prefix)
    assert not problems
    libgeniex = check_runtime_deps.needed(prefix / "lib" / "libgeniex.so")
    assert depends == set(linked), (depends, set(linked))
    files = sh(["dpkg-deb", "-c", deb]).stdout
    for path in ["./usr/bin/geniex", "./usr/lib/libgeniex.so.0", "./usr/lib/geniex/plugins/",
                 "./usr/include/geniex/geniex.h", "./usr/lib/pkgconfig/geniex.pc"]:
        assert re.search(re.escape(path) + r"(\s|$)", files), path
    # libgeniex.so needs nothing beyond what the CLI links (so the same Depends cover it).
    all_linked = set().union(*linked.values())
    assert libgeniex and set(libgeniex) <= all_linked, set(libgeniex) - all_linked


@pytest.mark.slow
def test_deb_installs_and_runs_on_a_bare_debian_root(packages, reference, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("the .deb test needs root (chroot, mount); CI runs as root. Run it with sudo "
                    "or leave it to CI")
    tarball = sh(["bash", REPO / "scripts" / "make_debian_root.sh"]).stdout.strip()
    root = tmp_path / "root"
    root.mkdir()
    sh(["tar", "-xf", tarball, "-C", root])
    # The bare root has none of the runtime libraries: apt must bring them from Depends.
    bare = subprocess.run(["chroot", root, "dpkg", "-s", "libicu72"], capture_output=True)
    assert bare.returncode != 0, "the minbase root already has libicu72: not a bare root"
    shutil.copy(packages["deb"], root / "tmp" / "geniex.deb")
    shutil.copy(MODEL, root / "tmp" / "model.gguf")
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    sh(["mount", "-t", "proc", "proc", root / "proc"])
    try:
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive",
               "HOME": "/root", "LANG": "C.UTF-8"}
        sh(["chroot", root, "apt-get", "update", "-q"], env=env)
        sh(["chroot", root, "apt-get", "install", "-y", "-q", "--no-install-recommends",
            "/tmp/geniex.deb"], env=env)
        r = sh(["chroot", root, "/usr/bin/geniex", *RUN, "-m", "/tmp/model.gguf", "--device", "cpu"],
               env=env)
        assert r.stdout == reference
        # The plugins come from /usr/lib/geniex/plugins, relative to /usr/bin/geniex.
        r = sh(["chroot", root, "/usr/bin/geniex", *RUN, "-m", "/tmp/model.gguf", "--device", "npu",
                "--explain-placement"], env=env)
        assert "-> npu(ref:" in r.stdout + r.stderr
        # Every library the binary needs resolves inside the root.
        ldd = sh(["chroot", root, "ldd", "/usr/bin/geniex"], env=env).stdout
        assert "not found" not in ldd, ldd
    finally:
        subprocess.run(["umount", str(root / "proc")], check=False)
