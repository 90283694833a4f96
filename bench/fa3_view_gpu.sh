#!/bin/bash
# fa3 as an algorithm of the viewer, on the H200 (issue 20, first part), in one call:
#   bench/fa3_view_gpu.sh          the GPU tests of tests/test_fa3_engine.py (the Gluon kernel against the engine
#                                  and float64 through `flashviz gpu run --algo fa3`), then `flashviz gpu run` and
#                                  `flashviz gpu profile --algo fa3` (ncu's TMA/LSU bytes against the closed form)
# Everything it writes goes under $OUT (default bench/results/fa3-view/<date>): run_*.json, profile_*.json, *.log.
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-bench/results/fa3-view/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout "${TESTS_S:-240}" python3 -m pytest -m gpu -q -p no:cacheprovider -rf --no-header tests/test_fa3_engine.py \
    2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
status=0
for shape in "256 64" "4096 64" "4096 128"; do
    set -- $shape
    for causal in "" "--causal"; do
        tag="n$1_d$2${causal:+_causal}"
        timeout "${RUN_S:-60}" python3 -m flashviz gpu run --algo fa3 --n "$1" --d "$2" --br 128 --bc 128 --heads 8 $causal \
            -o "$OUT/run_$tag.json" > "$OUT/run_$tag.log" 2>&1 || status=1
        tail -3 "$OUT/run_$tag.log"
        timeout "${PROFILE_S:-90}" python3 -m flashviz gpu profile --algo fa3 --n "$1" --d "$2" --br 128 --bc 128 --heads 8 $causal \
            -o "$OUT/profile_$tag.json" > "$OUT/profile_$tag.log" 2>&1 || status=1
        tail -4 "$OUT/profile_$tag.log"
    done
done
echo "fa3 viewer GPU check: $([ $status = 0 ] && echo ok || echo FAILED) (files in $OUT)"
exit $status
