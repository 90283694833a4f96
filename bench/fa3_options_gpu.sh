#!/usr/bin/env bash
# fa3's forward with issue 22's options on the H200 (or any sm_90 GPU), from the repository root; everything under
# $OUT/fa3-options/, in under 6 minutes:
#
#   OUT=/some/dir bash bench/fa3_options_gpu.sh
#
# 1. env: GPU, driver, versions, the commit.
# 2. tests: `pytest -m gpu tests/test_fa3_options.py` -- fa3's forward with Nq != Nk, windows, softcap, packed
#    sequences, with GQA and causal, against float64 (O, L, and dQ, dK, dV through FlashAttention-2's backward);
#    its first fixture compiles every kernel the tests launch in parallel processes. pytest -v names each test as it
#    starts, so a kernel that hangs shows in tests.log as the last name without a verdict; the stage is stopped by
#    SIGINT (pytest then prints its summary), then killed.
# 3. bench: bench/fa3_options_bench.py -- fa3 (its configs) against fa2-triton and SDPA cuDNN (where it takes the
#    case) on the feature benchmark's cache, window and softcap cases, forward; fa3-options-bench.{json,md}.
# 4. summary.txt: the stages' exit codes and times, the tests' verdicts, the table (printed last).
# Each stage has its own time limit; the whole stays under BUDGET s (default 330; + 20 s where a stage is killed).
set -u
OUT=${OUT:-$PWD/fa3-options-out}
O=$OUT/fa3-options
mkdir -p "$O"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export FLASHVIZ_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
unset TRITON_INTERPRET
PY=${PY:-python3}
BUDGET=${BUDGET:-330}
: >"$O/stages.txt"

stage() {  # stage NAME TIMEOUT_S COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    ((limit > BUDGET - SECONDS)) && limit=$((BUDGET - SECONDS))
    ((limit < 10)) && { echo "$name skipped: out of time" | tee -a "$O/stages.txt"; return; }
    echo "== $name: $*" >>"$O/$name.log"
    timeout --signal=INT --kill-after=20 "$limit" bash -c "$*" >>"$O/$name.log" 2>&1
    rc=$?
    printf '%-8s rc=%-3s %4ss (limit %ss)\n' "$name" "$rc" "$((SECONDS - t0))" "$limit" | tee -a "$O/stages.txt"
}

stage env 30 "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $PY -V; \
    $PY -c 'import torch, triton; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"triton\", \
    triton.__version__, \"cudnn\", torch.backends.cudnn.version())'; echo commit \$FLASHVIZ_COMMIT; date -u"
stage tests 205 "$PY -m pytest -v -p no:cacheprovider -m gpu tests/test_fa3_options.py -rfE \
    --junitxml=$O/tests.xml"
stage bench 110 "$PY bench/fa3_options_bench.py --out $O --budget-s 85"
{
    echo "# fa3 options on the GPU, commit $FLASHVIZ_COMMIT"
    cat "$O/stages.txt"
    echo "--- tests: verdicts"
    grep -E "(PASSED|FAILED|ERROR|SKIPPED)( |$)" "$O/tests.log" | sed -e 's/^tests\/test_fa3_options.py:://' | tail -n 60
    grep -E "^(FAILED|ERROR) |^=+ .*(passed|failed|error).* =+$|torch seed" "$O/tests.log" | tail -n 30
    echo "--- bench: log tail"
    grep -vE "^\|" "$O/bench.log" | tail -n 25
    echo "--- bench: table"
    [ -f "$O/fa3-options-bench.md" ] && cat "$O/fa3-options-bench.md" || echo "(no table: see bench.log)"
} >"$O/summary.txt" 2>&1
cat "$O/summary.txt"
