#!/bin/bash
# One warm H200 session in two calls (each under the device's 10-minute limit), after FlashAttention-4's wheels
# are in /root/w (bench/results/attention/NOTES.md, "fa3": the cu13 wheel travels in two halves):
#   bench/h200_session.sh check   install FA4, the GPU tests, the ladder's full run (with fa3's rungs)
#   bench/h200_session.sh race    the attention benchmark (every provider, one process), then --features
# Everything it writes goes under $OUT; a short table is printed last.
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:/root/fa4/nvidia_cutlass_dsl/dsl_packages:/root/fa4:${PYTHONPATH:-} PYTHONUNBUFFERED=1
START=$SECONDS
case "$1" in
check)
    if [ ! -d /root/fa4 ]; then
        cat /root/w/cu13.part.* .fa4b/cu13.part.* > /root/w/nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
        rm -f /root/w/cu13.part.*
        pip install -q --no-index --no-deps --target /root/fa4 /root/w/*.whl 2>&1 | tail -3
    fi
    python3 -c "from flash_attn.cute import flash_attn_func; print('fa4 importable')" 2>&1 | tail -1
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
    timeout "${TESTS_S:-170}" python3 -m pytest -m gpu -q -p no:cacheprovider -rf -x --no-header \
        tests/test_attention.py tests/test_fa3.py tests/test_fa2_triton.py ${EXTRA_TESTS:-} 2>&1 \
        | tail -25 | tee "$OUT/gpu-tests.log"
    mkdir -p "$OUT/ladder"
    timeout "${LADDER_S:-150}" python3 bench/ladder_bench.py --out "$OUT/ladder" --budget-s "${LADDER_BUDGET:-110}" \
        2>&1 | tee "$OUT/ladder.log" | tail -22
    ;;
race)
    mkdir -p "$OUT/attention"
    python3 bench/attention_bench.py --out "$OUT/attention" --budget-s "${BUDGET:-240}" --warmup 25 --rep 100 \
        --workers 14 --providers flashviz,fa3,fa4,sdpa-cudnn,flex > "$OUT/attention.log" 2>&1
    tail -4 "$OUT/attention.log"
    if [ -n "${FEATURES:-}" ]; then
        mkdir -p "$OUT/features"
        timeout "${FEATURES_S:-170}" python3 bench/attention_bench.py --features --out "$OUT/features" \
            --budget-s "${FEATURES_BUDGET:-130}" > "$OUT/features.log" 2>&1
        tail -4 "$OUT/features.log"
    fi
    cat "$OUT"/attention/*-nvidia-h200.md 2>/dev/null | sed -n '/^| D /,/^$/p' | head -20
    ;;
*)
    echo "usage: bench/h200_session.sh check|race" >&2
    exit 2
    ;;
esac
echo "run took $((SECONDS - START)) s"
