#!/usr/bin/env bash
# Packs the aarch64 JNI library (the aarch64 preset's build/aarch64/java/libgeniex_jni.so) into
# the Java SDK's jar that the test stage built with the x86-64 one, and checks that the jar then
# carries both: /native/linux-x86_64/ and /native/linux-aarch64/, each of its architecture.
#
#   bindings/java/pack_aarch64.sh [JAR]     (default: bindings/java/geniex-java/target/geniex-java-*.jar)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LIB="$ROOT/build/aarch64/java/libgeniex_jni.so"
JAR="${1:-$(ls "$ROOT"/bindings/java/geniex-java/target/geniex-java-*.jar 2>/dev/null |
  grep -v -e sources -e javadoc | head -1)}"
[[ -f "$LIB" ]] || { echo "pack_aarch64: $LIB not built (cmake --build --preset aarch64)" >&2; exit 1; }
[[ -n "$JAR" && -f "$JAR" ]] || { echo "pack_aarch64: no geniex-java jar (run the Java tests first)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/native/linux-aarch64"
cp "$LIB" "$work/native/linux-aarch64/"
(cd "$work" && jar uf "$JAR" native/linux-aarch64/libgeniex_jni.so)
for arch in x86_64:x86-64 aarch64:aarch64; do
  dir="${arch%%:*}" machine="${arch##*:}"
  rm -rf "$work/check" && mkdir -p "$work/check"
  (cd "$work/check" && jar xf "$JAR" "native/linux-$dir/libgeniex_jni.so")
  f="$work/check/native/linux-$dir/libgeniex_jni.so"
  [[ -f "$f" ]] || { echo "pack_aarch64: $JAR lacks native/linux-$dir/libgeniex_jni.so" >&2; exit 1; }
  readelf -h "$f" | grep -qi "Machine:.*$(
    [[ $dir == aarch64 ]] && echo AArch64 || echo X86-64)" ||
    { echo "pack_aarch64: native/linux-$dir/libgeniex_jni.so is not $machine" >&2; exit 1; }
done
echo "pack_aarch64: $(basename "$JAR") carries linux-x86_64 and linux-aarch64 JNI libraries"
