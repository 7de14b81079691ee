#!/usr/bin/env bash
# Decode tok/s through the Java SDK vs `geniex bench` (tg) on the same model (bench/java_bench/
# JavaBench.java: alternating runs, medians; prints one JSON object with the ratio and the JNI
# overhead per token in microseconds).
#
#   bench/java_bench.sh [-m MODEL] [-t 2] [-n 128] [-r 5] [-b BUILD_DIR]
#
# Needs a build with the JNI library (GENIEX_BUILD_JAVA=ON; default build/release) and a JDK.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODEL="${GENIEX_MODEL:-$HOME/.cache/geniex/models/gemma-3-270m-q4_k_m.gguf}"
THREADS=2 N=128 REPS=5 BUILD="$ROOT/build/release"
while getopts "m:t:n:r:b:" opt; do
  case "$opt" in
    m) MODEL="$OPTARG" ;;
    t) THREADS="$OPTARG" ;;
    n) N="$OPTARG" ;;
    r) REPS="$OPTARG" ;;
    b) BUILD="$(cd "$OPTARG" && pwd)" ;;
    *) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
javac -nowarn -d "$OUT" "$ROOT"/bindings/java/geniex-java/src/main/java/dev/geniex/*.java \
  "$ROOT/bench/java_bench/JavaBench.java"
java -Dgeniex.library.path="$BUILD/java" -cp "$OUT" JavaBench "$BUILD/tools/geniex" "$MODEL" \
  "$THREADS" "$N" "$REPS"
