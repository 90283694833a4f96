#!/usr/bin/env bash
# The second, shorter window (about 150 s): fa3's grouped-query forward against float64 (tests/test_fa3.py), the
# split forward's S swept on the decode cases and gqa causal N=8k by fa2 and fa3 (bench/decode_sweep.py).
# Writes under $OUT/decode/; prints a summary last.  Run from the repository root: bash bench/decode_gpu2.sh
set -u
OUT=${OUT:-/tmp/out}
D="$OUT/decode"
mkdir -p "$D"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
git rev-parse HEAD > "$D/commit2.txt" 2>/dev/null
timeout 60 python -m pytest -q -p no:cacheprovider -m gpu tests/test_fa3.py -k "grouped or auto_picks" \
  > "$D/test_fa3_gqa.log" 2>&1
echo "test_fa3 gqa rc=$?" > "$D/summary2.txt"
timeout 85 python bench/decode_sweep.py --out "$D" --budget-s 60 > "$D/decode-sweep.log" 2>&1
echo "decode_sweep rc=$?" >> "$D/summary2.txt"
cat "$D/summary2.txt"
tail -n 3 "$D/test_fa3_gqa.log"
cat "$D/decode-sweep.log" | tail -n 80
