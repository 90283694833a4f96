#!/usr/bin/env bash
# Everything flashviz's GPU claims rest on, in one run on the GPU machine; logs and JSON under $OUT/r,
# packed into $OUT/evidence.tar.gz after every stage (so a run cut short still brings back what it did).
#
#   bash bench/gpu_evidence.sh [stage ...]     stages: env tests run profile sanitize planted others bench anchors
#
# Needs: python3 with numpy, click, rich, orjson, cupy; ncu and compute-sanitizer on PATH.
# anchors runs .gpucarry/bench_anchors.py (a copy of shared/tools/bench_anchors.py) when present.
set -u
OUT=${OUT:-$PWD/gpu-out}
R=$OUT/r
mkdir -p "$R"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
FV="$PY -m flashviz gpu"
stages=${*:-env run profile sanitize tests planted bench anchors}

pack() { tar czf "$OUT/evidence.tar.gz" -C "$OUT" r; }
BUDGET=${BUDGET:-585}  # seconds for the whole script: a stage gets at most what is left of it
stage() {  # stage NAME TIMEOUT_S COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    ((limit > BUDGET - SECONDS)) && limit=$((BUDGET - SECONDS))
    ((limit < 5)) && { echo "$name skipped: out of time" | tee -a "$R/stages.txt"; return; }
    echo "== $name: $*" | tee -a "$R/$name.log"
    timeout "$limit" bash -c "$*" >>"$R/$name.log" 2>&1
    rc=$?
    printf '%-28s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$R/stages.txt"
    pack
}

for s in $stages; do
    case $s in
    env)
        stage env 120 "nvidia-smi; nvidia-smi -q | grep -iE 'clocks|MHz|Persistence|Compute Mode|MIG' | head -40; \
            uname -a; $PY -V; $PY -c 'import numpy, cupy, click, rich, orjson; print(numpy.__version__, cupy.__version__)'; \
            nvcc --version | tail -2; ncu --version | tail -1; compute-sanitizer --version | tail -1; \
            ncu --query-metrics --chip gh100 | grep -E '^(lts__t_sectors_srcunit_tex |l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit|gpu__time_duration |l1tex__t_bytes_pipe_lsu_mem_global_op_(red|atom) )'"
        ;;
    tests)
        stage tests_gpu 420 "$PY -m pytest -m gpu -v -rP -p no:cacheprovider tests/test_gpu.py"
        ;;
    others)  # every other algorithm that has landed: run, profile, sanitize
        for a in standard fa1 fa2-backward; do
            stage "run_$a" 300 "$FV run --algo $a --n 1000 --d 64 --br 32 --bc 64 --heads 2 --causal -o $R/run_${a}_n1000_causal.json \
                && $FV run --algo $a --n 100 --d 16 --br 32 --bc 16 --heads 3 -o $R/run_${a}_n100.json"
            stage "profile_$a" 240 "$FV profile --algo $a --n 1024 --d 64 --br 32 --bc 32 --heads 2 -o $R/profile_${a}_n1024.json"
            stage "sanitize_$a" 300 "$FV sanitize --algo $a --n 100 --d 16 --br 32 --bc 16 --heads 2 --causal -o $R/sanitize_${a}_n100_causal.json"
        done
        ;;
    run)
        stage run_seed 120 "$FV run --json -o $R/run_seed.json && $FV run"
        stage run_ragged 300 "$FV run --n 1000 --d 64 --br 64 --bc 64 --heads 4 --batch 2 --seed 5 -o $R/run_n1000_h8.json \
            && $FV run --n 100 --d 16 --br 32 --bc 16 --heads 3 --causal --seed 9 -o $R/run_n100_causal.json \
            && $FV run --n 4096 --d 64 --br 32 --bc 32 --heads 2 -o $R/run_n4096.json"
        ;;
    profile)
        stage profile_seed 240 "$FV profile -o $R/profile_seed.json"
        stage profile_n4096 240 "$FV profile --n 4096 --d 64 --br 32 --bc 32 -o $R/profile_n4096_d64_b32.json"
        stage profile_n1000 240 "$FV profile --n 1000 --d 64 --br 64 --bc 64 --heads 2 -o $R/profile_n1000_d64_b64_h2.json"
        stage profile_n100 240 "$FV profile --n 100 --d 16 --br 32 --bc 16 --heads 3 -o $R/profile_n100_d16_h3.json"
        stage profile_n1024_causal 240 "$FV profile --n 1024 --d 64 --br 32 --bc 32 --heads 2 --causal -o $R/profile_n1024_causal.json"
        stage profile_n8192_h16 300 "$FV profile --n 8192 --d 64 --br 64 --bc 64 --heads 16 -o $R/profile_n8192_h16.json"
        ;;
    sanitize)
        stage sanitize_seed 300 "$FV sanitize -o $R/sanitize_seed.json"
        stage sanitize_n10_h2 300 "$FV sanitize --n 10 --heads 2 -o $R/sanitize_n10_h2.json"
        stage sanitize_n100_causal 300 "$FV sanitize --n 100 --d 16 --br 32 --bc 16 --heads 3 --causal -o $R/sanitize_n100_causal.json"
        stage sanitize_n1000_b64 400 "$FV sanitize --n 1000 --d 64 --br 64 --bc 64 --heads 2 -o $R/sanitize_n1000_b64.json"
        ;;
    planted)  # the tools do catch what they are meant to: an out-of-bounds write and a shared-memory race
        stage planted_memcheck 120 "compute-sanitizer --tool memcheck $PY bench/planted_bugs.py oob"
        stage planted_racecheck 120 "compute-sanitizer --tool racecheck $PY bench/planted_bugs.py race"
        stage planted_memcheck_pool 120 "compute-sanitizer --tool memcheck $PY bench/planted_bugs.py oob-pool"
        ;;
    bench)
        stage bench 420 "$PY bench/gpu_bench.py --out $R"
        ;;
    anchors)
        stage anchors 480 "OUT=$R $PY .gpucarry/bench_anchors.py"
        ;;
    esac
done
echo
cat "$R/stages.txt"
