#!/usr/bin/env bash
# Builds llama.cpp's judge tools (llama-perplexity, llama-simple, llama-quantize, llama-imatrix,
# llama-server) once per machine, from the source that the
# PyPI sdist of llama-cpp-python carries (pinned below), into the user's cache:
#
#   scripts/build_llamacpp.sh [--print-dir | --bench]
#
# Prints nothing and does nothing when the build is current (same version, same CPU flags:
# GGML_NATIVE tunes it to this machine). --print-dir prints the folder holding the binaries.
# --bench also builds the speed judges the bench/ scripts run (llama-bench, llama-mtmd-cli);
# setup and CI do not need them.
# Tests find it through scripts/llamacpp_dir (the same path) or $GENIEX_LLAMACPP_BIN.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="0.3.36" # llama-cpp-python; vendors llama.cpp 0c1e57098
# The same folder as scripts/goldens (GOLDENS_HOME): one llama.cpp source and build per machine.
CACHE="${GOLDENS_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/geniex-goldens}"
SRC="$CACHE/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$SRC/build"
BIN="$BUILD/bin"
TARGETS=(llama-perplexity llama-simple llama-quantize llama-imatrix llama-server)

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$BIN"
  exit 0
fi

EXTRA=()
[[ "${1:-}" == "--bench" ]] && EXTRA=(llama-bench llama-mtmd-cli)

# The bench judges, into the same build (incremental: the judge tools are built first).
build_extra() {
  local t missing=0
  for t in "${EXTRA[@]}"; do [[ -x "$BIN/$t" ]] || missing=1; done
  ((missing)) || return 0
  echo "llama.cpp: building ${EXTRA[*]}" >&2
  cmake --build "$BUILD" --target "${EXTRA[@]}" >>"$CACHE/llama_tools_build.log" 2>&1 ||
    { tail -n 30 "$CACHE/llama_tools_build.log" >&2; exit 1; }
}

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY=python3
cpu_key="$(grep -m1 '^flags' /proc/cpuinfo | sha256sum | cut -c1-16)"
want="$VERSION ${TARGETS[*]} $cpu_key"
current=0
if [[ -f "$BUILD/.geniex-stamp" && "$(cat "$BUILD/.geniex-stamp")" == "$want" ]]; then
  current=1
  for t in "${TARGETS[@]}"; do [[ -x "$BIN/$t" ]] || current=0; done
fi
if ((current)); then
  build_extra
  exit 0
fi

mkdir -p "$CACHE"
if [[ ! -f "$SRC/CMakeLists.txt" ]]; then
  echo "llama.cpp: fetching the llama-cpp-python $VERSION sdist from PyPI" >&2
  "$PY" -m pip download --disable-pip-version-check --no-input --no-deps --no-binary :all: \
    -d "$CACHE" "llama-cpp-python==$VERSION" >"$CACHE/download.log" 2>&1
  tar -xzf "$CACHE/llama_cpp_python-$VERSION.tar.gz" -C "$CACHE"
fi
echo "llama.cpp: building ${TARGETS[*]} (once per machine, a few minutes)" >&2
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_EXAMPLES=ON >"$CACHE/llama_tools_build.log" 2>&1 ||
  { tail -n 30 "$CACHE/llama_tools_build.log" >&2; exit 1; }
cmake --build "$BUILD" --target "${TARGETS[@]}" >>"$CACHE/llama_tools_build.log" 2>&1 ||
  { tail -n 30 "$CACHE/llama_tools_build.log" >&2; exit 1; }
echo "$want" >"$BUILD/.geniex-stamp"
build_extra
