#!/usr/bin/env bash
# Runs every test of the release build: ctest (C++ unit tests) and pytest (tests/python; the
# geniex Python package is imported from the build tree, build/release/python).
#
#   scripts/test.sh [PYTEST_ARGS...]
#
# Builds build/release first if needed (configuring the `release` preset when there is no build
# yet). Needs the venv from scripts/setup.sh. Exits non-zero if any test fails.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PY="$ROOT/.venv/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "test.sh: $PY not found: run scripts/setup.sh first" >&2
  exit 2
fi

# Configure when there is no build yet, or when it predates the Python package (GENIEX_BUILD_PYTHON,
# set by the preset): the tests import geniex from build/release/python; likewise the JNI library
# (GENIEX_BUILD_JAVA) the Java tests load from build/release/java.
if [[ ! -f build/release/CMakeCache.txt ]] ||
  ! grep -q '^GENIEX_BUILD_PYTHON:BOOL=ON$' build/release/CMakeCache.txt ||
  ! grep -q '^GENIEX_BUILD_JAVA:BOOL=ON$' build/release/CMakeCache.txt; then
  cmake --preset release || exit $?
fi
echo "== build (release)"
cmake --build --preset release || { echo "test.sh: build failed" >&2; exit 1; }

echo
echo "== ctest --preset release"
ctest --preset release
ctest_rc=$?

echo
echo "== pytest tests/python (GENIEX_BUILD_DIR=build/release, geniex from build/release/python)"
PYTHONPATH="$ROOT/build/release/python${PYTHONPATH:+:$PYTHONPATH}" \
  GENIEX_BUILD_DIR="$ROOT/build/release" "$PY" -m pytest -p no:cacheprovider -ra tests/python "$@"
pytest_rc=$?
if [[ $pytest_rc -eq 5 ]]; then
  echo "test.sh: pytest collected no tests under tests/python: that is a failure" >&2
fi

echo
echo "== mvn verify bindings/java (libgeniex_jni from build/release/java; JUnit with -Xcheck:jni)"
bash "$ROOT/bindings/java/run_tests.sh" "$ROOT/build/release"
java_rc=$?

echo
echo "== summary: ctest $([[ $ctest_rc -eq 0 ]] && echo passed || echo "FAILED (exit $ctest_rc)")," \
  "pytest $([[ $pytest_rc -eq 0 ]] && echo passed || echo "FAILED (exit $pytest_rc)")," \
  "java $([[ $java_rc -eq 0 ]] && echo passed || echo "FAILED (exit $java_rc)")"
if [[ $ctest_rc -ne 0 || $pytest_rc -ne 0 || $java_rc -ne 0 ]]; then
  exit 1
fi
