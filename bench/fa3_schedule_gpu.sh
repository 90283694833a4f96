#!/bin/bash
# Issue 20 on the H200 (fa3measure): the tensor pipe and the warps' issue stalls under Nsight Compute.
#   bench/fa3_schedule_gpu.sh   1. `ncu --query-metrics` (the list it prints is kept: metrics.txt, and the tensor /
#                                  stall names in it: pipe_metrics.txt)
#                               2. `flashviz gpu profile` of fa3 and fa2-triton at N=4096 D=128, 16 heads: the bytes
#                                  beside the model as before, plus the "pipe" block (docs/profile-schema.md)
#                               3. bench/fa3_schedule_record.py: the timestamped fa3 forward's record (O checked)
#                               4. a summary table (bench/fa3_schedule_summary.py), last
# Each part has its own `timeout`; everything goes under $OUT/fa3measure (default bench/results/fa3-view/<date>).
set -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
if [ -n "${OUT:-}" ]; then D="$OUT/fa3measure"; else D="bench/results/fa3-view/$(date -u +%Y-%m-%d)"; fi
mkdir -p "$D"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)" | tee "$D/machine.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$D/machine.txt"
(ncu --version | tail -1) 2>&1 | tee -a "$D/machine.txt"
echo "command: bench/fa3_schedule_gpu.sh" >> "$D/machine.txt"
status=0
timeout 30 ncu --query-metrics > "$D/metrics.txt" 2>&1 || echo "ncu --query-metrics failed"
grep -E "^(sm__pipe_tensor|sm__inst_executed_pipe_tensor|smsp__average_warps_issue_stalled|smsp__pcsamp_warps_issue_stalled|smsp__average_warp_latency|sm__inst_issued)" \
    "$D/metrics.txt" > "$D/pipe_metrics.txt"
echo "ncu lists $(wc -l < "$D/metrics.txt") lines; tensor/stall names: $(wc -l < "$D/pipe_metrics.txt")"
BUDGET=${BUDGET:-200}  # seconds for the whole script: a part that might not fit is skipped (and says so)
fits() { [ $((SECONDS + $1)) -le "$BUDGET" ] || { echo "skipped $2: ${SECONDS}s used of ${BUDGET}s"; return 1; }; }
prof() {  # tag timeout args...
    local tag=$1 t=$2 rc
    shift 2
    fits "$t" "profile $tag" || return 0
    timeout "$t" python3 -m flashviz gpu profile "$@" -o "$D/profile_$tag.json" > "$D/profile_$tag.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { status=1; echo "profile $tag failed (exit $rc)"; }
    tail -6 "$D/profile_$tag.log"
}
prof fa3_n4096_d128 90 --algo fa3 --n 4096 --d 128 --br 128 --bc 128 --heads 16
if [ -f bench/fa3_schedule_record.py ] && fits 60 "timestamp record"; then
    timeout 60 python3 bench/fa3_schedule_record.py -o "$D/fa3_schedule_measured.json" > "$D/record.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { status=1; echo "timestamp record failed (exit $rc)"; }
    tail -10 "$D/record.log"
fi
prof fa2-triton_n4096_d128 80 --algo fa2-triton --n 4096 --d 128 --br 128 --bc 64 --heads 16
prof fa3_n4096_d128_causal 60 --algo fa3 --n 4096 --d 128 --br 128 --bc 128 --heads 16 --causal
echo "parts done in ${SECONDS}s"
python3 bench/fa3_schedule_summary.py "$D" || status=1
exit $status
