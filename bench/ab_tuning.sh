#!/usr/bin/env bash
# Alternating A/B of two CPU tuning settings on one geniex binary: decode tok/s of
#   geniex bench -m MODEL -p 0 -n 64 -r 2 -t THREADS --json --cpu-tuning SPEC
# run with SPEC_A, then SPEC_B, ROUNDS times; prints each run and the medians, B/A, and how many
# rounds B won. On a host whose bandwidth drifts minute to minute only such paired runs compare.
# A SPEC is --cpu-tuning's key=value list (geniex::parse_cpu_tuning; "" = the defaults).
#
#   bench/ab_tuning.sh MODEL THREADS ROUNDS "SPEC_A" "SPEC_B"
#   e.g. bench/ab_tuning.sh llama-3.2-1b-q4_k_m.gguf 1 6 huge_pages=0 huge_pages=1
#
# GENIEX=path overrides the binary (default build/release/tools/geniex).
set -euo pipefail
if [[ $# -ne 5 ]]; then
  echo "usage: $0 MODEL THREADS ROUNDS \"SPEC_A\" \"SPEC_B\"" >&2
  exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GENIEX="${GENIEX:-$ROOT/build/release/tools/geniex}"
model=$1 threads=$2 rounds=$3 spec_a=$4 spec_b=$5
a=() b=()
for ((r = 1; r <= rounds; ++r)); do
  for cfg in A B; do
    [[ $cfg == A ]] && e=$spec_a || e=$spec_b
    v=$("$GENIEX" bench -m "$model" -p 0 -n 64 -r 2 -t "$threads" --json --cpu-tuning "$e" |
      python3 -c "import json, sys; print(round(json.load(sys.stdin)['tg']['median_tok_s'], 2))")
    echo "round $r $cfg ($e): $v tok/s"
    [[ $cfg == A ]] && a+=("$v") || b+=("$v")
  done
done
python3 - "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
wins = sum(y > x for x, y in zip(a, b))
print(f"median A {ma:.2f}  B {mb:.2f}  B/A {mb / ma:.3f}  B faster in {wins} of {len(a)} rounds")
PY
