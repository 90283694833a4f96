#!/bin/bash
# The fa3 run on the H200, after FlashAttention-4's wheels are installed in /root/fa4 (see NOTES.md, "fa3"):
# the attention benchmark with every provider in one process, then, while the call has time left, the GPU tests
# and the ladder's quick run. Everything it writes goes under $OUT.
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
START=$SECONDS
python3 bench/attention_bench.py --out "$OUT" --budget-s "${BUDGET:-380}" --warmup 25 --rep 100 --workers 14 \
    --providers flashviz,fa3,fa4,sdpa-cudnn,flex 2>&1 | tee "$OUT/attention.log"
if (( SECONDS - START < ${TESTS_IF_BEFORE:-450} )); then
    timeout 100 python3 -m pytest -m gpu tests/test_fa3.py -q -p no:cacheprovider -rf 2>&1 | tail -20 \
        | tee "$OUT/gpu-tests.log"
fi
if (( SECONDS - START < ${LADDER_IF_BEFORE:-420} )); then
    mkdir -p "$OUT/ladder"
    timeout 120 python3 bench/ladder_bench.py --out "$OUT/ladder" --budget-s 80 --quick 2>&1 | tail -30
fi
echo "run took $((SECONDS - START)) s"
