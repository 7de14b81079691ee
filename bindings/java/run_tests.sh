#!/usr/bin/env bash
# Runs the Java/Kotlin SDK's build and JUnit suites (mvn verify, -Xcheck:jni) against a CMake
# build that already has the JNI library (GENIEX_BUILD_JAVA=ON) and the geniex CLI:
#
#   bindings/java/run_tests.sh [BUILD_DIR]      # default build/release
#
# Fails when a test fails, when none ran, or when CheckJNI reported anything (its warnings land
# in surefire's reports). Prints "java: N passed, N failed".
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build/release}" && pwd)" || exit 2
if ! command -v mvn >/dev/null 2>&1; then
  echo "run_tests.sh: mvn not found: run scripts/setup.sh" >&2
  exit 2
fi
if [[ ! -f "$BUILD/java/libgeniex_jni.so" ]]; then
  echo "run_tests.sh: $BUILD/java/libgeniex_jni.so missing (configure with GENIEX_BUILD_JAVA=ON)" >&2
  exit 2
fi

rm -rf "$ROOT"/bindings/java/*/target/surefire-reports
mvn -q -B -f "$ROOT/bindings/java/pom.xml" verify -Dgeniex.skipNative=true \
  -Dgeniex.native.dir="$BUILD/java" -Dgeniex.cli="$BUILD/tools/geniex"
rc=$?

reports=("$ROOT"/bindings/java/*/target/surefire-reports)
# CheckJNI writes to the forked JVM's stdout: surefire keeps it in *-output.txt or, outside a
# test, in *.dumpstream files.
if grep -rlsE "WARNING in native method|FATAL ERROR in native method|JNI DETECTED ERROR" \
  "${reports[@]}" >/dev/null 2>&1; then
  echo "run_tests.sh: CheckJNI reported problems:" >&2
  grep -rhsE -A3 "WARNING in native method|FATAL ERROR in native method|JNI DETECTED ERROR" \
    "${reports[@]}" | head -40 >&2
  rc=1
fi
# Count the testcases of the JUnit XML reports.
tests=0 failed=0
for xml in "$ROOT"/bindings/java/*/target/surefire-reports/TEST-*.xml; do
  [[ -f "$xml" ]] || continue
  line="$(grep -m1 '<testsuite ' "$xml")"
  t="$(sed -nE 's/.* tests="([0-9]+)".*/\1/p' <<<"$line")"
  f="$(sed -nE 's/.* failures="([0-9]+)".*/\1/p' <<<"$line")"
  e="$(sed -nE 's/.* errors="([0-9]+)".*/\1/p' <<<"$line")"
  s="$(sed -nE 's/.* skipped="([0-9]+)".*/\1/p' <<<"$line")"
  tests=$((tests + ${t:-0} - ${s:-0}))
  failed=$((failed + ${f:-0} + ${e:-0}))
done
if ((tests == 0)); then
  echo "run_tests.sh: no JUnit test ran: that is a failure" >&2
  rc=1
fi
echo  # Maven's console may leave its colour resets without a newline
echo "java: $((tests - failed)) passed, $failed failed"
exit "$rc"
