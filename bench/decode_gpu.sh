#!/usr/bin/env bash
# Issue 22's decode work on the H200 (about 230 s in all; each part under its own `timeout`):
#   1. the `gpu` tests of the split-KV forward (tests/test_decode.py) and fa2's options, against float64;
#   2. bench/attention_bench.py --features on the decode cases (Nq = 1, 16, 128 x Nk = 8k, 32k, 128k), every provider
#      in one process; 3. the same on gqa causal N=8k, window 4096 N=32k, softcap 50 N=8k.
# Writes everything under $OUT/decode/; prints a summary table last.  Run from the repository root:
#   bash bench/decode_gpu.sh
set -u
OUT=${OUT:-/tmp/out}
D="$OUT/decode"
mkdir -p "$D/decode" "$D/training"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if [ -d /root/fa4 ]; then
  export PYTHONPATH="/root/fa4/nvidia_cutlass_dsl/dsl_packages:/root/fa4:$PYTHONPATH"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$D/gpu.txt" 2>&1
git rev-parse HEAD > "$D/commit.txt" 2>/dev/null

# 1. correctness of the split forward on the GPU (compiled), against float64
timeout 60 python -m pytest -q -p no:cacheprovider -m gpu tests/test_decode.py > "$D/test_decode.log" 2>&1
echo "test_decode rc=$?" > "$D/summary.txt"

# 2. the decode cases, every provider in this process
timeout 85 python bench/attention_bench.py --features --case decode --out "$D/decode" --budget-s 70 \
  > "$D/features-decode.log" 2>&1
echo "features decode rc=$?" >> "$D/summary.txt"

# 3. the training cases the work touches (flashviz's forward is unchanged there: the anchors of the same run)
timeout 80 python bench/attention_bench.py --features --case "gqa causal N=8k" --case "window 4096" \
  --case "softcap 50" --out "$D/training" --budget-s 65 > "$D/features-training.log" 2>&1
echo "features training rc=$?" >> "$D/summary.txt"

cat "$D/summary.txt"
tail -n 5 "$D/test_decode.log"
for f in "$D"/decode/*-features.md "$D"/training/*-features.md; do
  [ -f "$f" ] && grep '^|' "$f"
done
