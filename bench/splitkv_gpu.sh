#!/usr/bin/env bash
# fa2-splitkv (Flash-Decoding, issue 18) on the GPU machine, from the repository root; everything under $OUT/splitkv/:
#
#   OUT=/some/dir bash bench/splitkv_gpu.sh
#
# 1. env: GPU, driver, Python packages, ncu, the commit.
# 2. run: `flashviz gpu run --algo fa2-splitkv` (the split kernel, then the combine) at a few shapes, its O and L
#    checked against the engine and float64 (exit 1 on a disagreement), ragged N included.
# 3. profile: `flashviz gpu profile --algo fa2-splitkv` (Nsight Compute): global bytes per tensor beside the model's
#    closed form, the partials included; fa2 at the same shape as the anchor.
# 4. summary.txt: the stages' exit codes and times, and the lines of each report that say pass/fail and bytes.
# Each stage has its own timeout; the whole stays under BUDGET seconds (default 150).
set -u
OUT=${OUT:-$PWD/splitkv-out}
O=$OUT/splitkv
mkdir -p "$O"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
FV="$PY -m flashviz gpu"
BUDGET=${BUDGET:-150}

stage() {  # stage NAME TIMEOUT_S COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    ((limit > BUDGET - SECONDS)) && limit=$((BUDGET - SECONDS))
    ((limit < 5)) && { echo "$name skipped: out of time" | tee -a "$O/stages.txt"; return; }
    echo "== $name: $*" >>"$O/$name.log"
    timeout "$limit" bash -c "$*" >>"$O/$name.log" 2>&1
    rc=$?
    printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$O/stages.txt"
}

stage env 20 "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $PY -V; \
    $PY -c 'import numpy, cupy; print(\"numpy\", numpy.__version__, \"cupy\", cupy.__version__)'; \
    ncu --version | tail -1; git log -1 --format='%H %s' || true; date -u"
stage run_n8_d4 20 "$FV run --algo fa2-splitkv --n 8 --d 4 --br 4 --bc 4 -o $O/run_n8_d4.json"
stage run_n1000_d64 25 "$FV run --algo fa2-splitkv --n 1000 --d 64 --br 32 --bc 32 --heads 4 -o $O/run_n1000_d64.json"
stage run_n4096_d64 25 "$FV run --algo fa2-splitkv --n 4096 --d 64 --br 64 --bc 64 --heads 2 -o $O/run_n4096_d64.json"
stage profile_n1024_d64 40 "$FV profile --algo fa2-splitkv --n 1024 --d 64 --br 64 --bc 64 -o $O/profile_n1024_d64.json"
stage profile_fa2_n1024_d64 30 "$FV profile --algo fa2 --n 1024 --d 64 --br 64 --bc 64 -o $O/profile_fa2_n1024_d64.json"
# the summary: stage codes and each report's verdict and bytes (the JSON files hold the rest)
{
    cat "$O/stages.txt"
    for f in "$O"/run_*.log "$O"/profile_*.log; do
        [ -f "$f" ] || continue
        echo "--- $(basename "$f")"
        tail -n 25 "$f"
    done
} >"$O/summary.txt" 2>&1
cat "$O/summary.txt"
