#!/usr/bin/env bash
# fa2-triton on the GPU machine (issue 12), from the repository root; logs, JSON and a summary under $OUT, ready to be
# copied into bench/results/fa2-triton/:
#
#   OUT=/some/dir bash bench/fa2_triton_gpu.sh
#
# 1. env: GPU, torch, Triton, CuPy, ncu versions.
# 2. run: `flashviz gpu run --algo fa2-triton` on the engine's inputs (8 heads), checked against the engine and
#    float64: the autotuned tiles of N=4096 D=64 (non-causal and causal), D=128, and a ragged causal N=1000.
# 3. profile: `flashviz gpu profile --algo fa2-triton` (Nsight Compute): the TMA and LSU counters beside the model
#    (N=4096 D=64, 8 heads: bench/results/tma's shape), non-causal right after its run, then causal.
# 3b. tensormaps: fa2_fwd's PTX for sm_90, its tensormap writes (what the atomic pipe's counter sees) and scratch.
# 4. interpret: the engine against the kernel run by Triton's interpreter on the CPU (TRITON_INTERPRET=1), the test
#    CI runs too (last: it needs pytest, and only CPU time).
# 5. summary.md / summary.json from the JSON files (always; stages cut by BUDGET are listed in stages.txt).
# 6. pack: every log and JSON goes into runs.tar.gz, so that $OUT holds four files (runs.tar.gz, summary.md,
#    summary.json, stages.txt): the device machine returns at most 8. Unpack with `tar xzf runs.tar.gz`.
# Needs: python3 with numpy, click, rich, orjson, cupy, torch and triton; ncu on PATH.
set -u
OUT=${OUT:-$PWD/fa2-triton-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
FV="$PY -m flashviz gpu"
BUDGET=${BUDGET:-570}

stage() {  # stage NAME TIMEOUT_S COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    ((limit > BUDGET - SECONDS)) && limit=$((BUDGET - SECONDS))
    ((limit < 5)) && { echo "$name skipped: out of time" | tee -a "$OUT/stages.txt"; return; }
    echo "== $name: $*" >>"$OUT/$name.log"
    timeout "$limit" bash -c "$*" >>"$OUT/$name.log" 2>&1
    rc=$?
    printf '%-24s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$OUT/stages.txt"
}

stage env 60 "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; $PY -V; \
    $PY -c 'import numpy, torch, triton, cupy; print(\"numpy\", numpy.__version__, \"torch\", torch.__version__, \"triton\", triton.__version__, \"cupy\", cupy.__version__)'; \
    ncu --version | tail -1; git log -1 --format='%H %s' || true"
stage run_n4096_d64 120 "$FV run --algo fa2-triton --n 4096 --d 64 --br 128 --bc 64 --heads 8 -o $OUT/run_n4096_d64.json"
stage profile_n4096_d64 200 "$FV profile --algo fa2-triton --n 4096 --d 64 --br 128 --bc 64 --heads 8 -o $OUT/profile_n4096_d64.json"
stage run_n4096_d64_causal 120 "$FV run --algo fa2-triton --n 4096 --d 64 --br 128 --bc 64 --heads 8 --causal -o $OUT/run_n4096_d64_causal.json"
stage run_n4096_d128 120 "$FV run --algo fa2-triton --n 4096 --d 128 --br 128 --bc 64 --heads 8 -o $OUT/run_n4096_d128.json"
stage run_n1000_d64_causal 120 "$FV run --algo fa2-triton --n 1000 --d 64 --br 128 --bc 128 --heads 8 --causal -o $OUT/run_n1000_d64_causal.json"
stage profile_n4096_d64_causal 200 "$FV profile --algo fa2-triton --n 4096 --d 64 --br 128 --bc 64 --heads 8 --causal -o $OUT/profile_n4096_d64_causal.json"
stage tensormaps 60 "$PY bench/fa2_triton_tensormaps.py"
stage interpret 200 "TRITON_INTERPRET=1 $PY -m pytest -q -p no:cacheprovider tests/test_fa2_triton.py -k interpreter"
# the summary always runs, whatever the budget left: it reads what the stages wrote
$PY bench/fa2_triton_summary.py "$OUT" >"$OUT/summary.log" 2>&1
echo "summary                  rc=$?" | tee -a "$OUT/stages.txt"
# at most 8 files come back from the device machine: the logs and JSON files travel as one archive
(cd "$OUT" && mapfile -t packed < <(ls -- *.log *.json 2>/dev/null | grep -vx summary.json) &&
    tar czf runs.tar.gz -- "${packed[@]}" && rm -f -- "${packed[@]}")
echo "packed: $(cd "$OUT" && ls | tr '\n' ' ')" | tee -a "$OUT/stages.txt"
