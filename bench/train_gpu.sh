#!/usr/bin/env bash
# flashviz.attention where people train, on the GPU machine: the GPU tests, the tuning benchmark (compile workers
# on, and off), the softcap check and timing against a tree from before it, steady speed against that tree, all
# under the image's Triton (3.6), or under another carried one (TRITON_DIR: see ../shared/tools/triton-for-gpu).
# Logs and JSON under a temporary r/, packed into $OUT/$TAG.tar.gz after every stage (TAG: r unless given), so that
# what comes back from the GPU machine is one file per run of this script.
#
#   bash bench/train_gpu.sh STAGE...   stages: env tests tests-core tests-fa3 tuning
#   tuning-empty tuning-serial softcap softcap-check steady steady-one
#   BEFORE=.gpu_before/src (a tree from before: git archive 9cfb966 src | tar -x -C .gpu_before)
set -u
OUT=${OUT:-$PWD/gpu-out}
TAG=${TAG:-r}
R=$(mktemp -d)/r
mkdir -p "$OUT" "$R" && touch "$R/stages.txt"
if [ -n "${TRITON_DIR:-}" ]; then
    export PYTHONPATH=$TRITON_DIR${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
BEFORE=${BEFORE:-$PWD/.gpu_before/src}
PY=${PY:-python3}
BUDGET=${BUDGET:-570}

pack() { tar czf "$OUT/$TAG.tar.gz" -C "$(dirname "$R")" r; }
stage() { # stage NAME TIMEOUT_S COMMAND...
    local name=$1 limit=$2 t0=$SECONDS rc
    shift 2
    ((limit > BUDGET - SECONDS)) && limit=$((BUDGET - SECONDS))
    ((limit < 5)) && {
        echo "$name skipped: out of time" | tee -a "$R/stages.txt"
        return
    }
    echo "== $name: $*" | tee -a "$R/$name.log"
    timeout -s INT -k 10 "$limit" bash -c "$*" >>"$R/$name.log" 2>&1
    rc=$?
    printf '%-16s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$R/stages.txt"
    tail -n 12 "$R/$name.log"
    pack
}

TESTS="tests/test_precompile.py tests/test_attention_compile.py tests/test_attention.py tests/test_decode.py \
    tests/test_transformers.py tests/test_attention_options.py"
for s in "$@"; do
    case $s in
    env) stage env 60 "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; \
        $PY -c 'import torch, triton; print(torch.__version__, triton.__version__, triton.__file__)'" ;;
    tests) stage tests 240 "$PY -m pytest -q -p no:cacheprovider -m gpu -rfE $TESTS" ;;
    tests-fa3) stage tests-fa3 240 "$PY -m pytest -q -p no:cacheprovider -m gpu -rfE tests/test_fa3.py \
        tests/test_fa3_options.py" ;;
    tuning) stage tuning 240 "$PY bench/tuning_bench.py --out $R/tuning" ;;
    tuning-serial) stage tuning-serial 120 "FLASHVIZ_COMPILE_WORKERS=0 $PY bench/tuning_bench.py \
        --scenarios empty --out $R/tuning-serial" ;;
    softcap-check) stage softcap-check 90 "$PY bench/softcap_gpu.py --check --label new --out $R/softcap" ;;
    tests-core) stage tests-core 150 "$PY -m pytest -q -p no:cacheprovider -m gpu -rfE tests/test_precompile.py \
        tests/test_attention.py tests/test_attention_compile.py" ;;
    tuning-empty) stage tuning-empty 120 "$PY bench/tuning_bench.py --scenarios empty --out $R/tuning-empty" ;;
    softcap) stage softcap 180 "$PY bench/softcap_gpu.py --check --time --label new --out $R/softcap; \
        PYTHONPATH=$BEFORE $PY bench/softcap_gpu.py --time --label before --out $R/softcap" ;;
    steady) stage steady 330 "$PY bench/steady_speed.py --tree new=src --tree before=$BEFORE --out $R/steady" ;;
    steady-one) stage steady-one 200 "$PY bench/steady_speed.py --tree new=src --out $R/steady-one" ;;
    *) echo "unknown stage $s" ;;
    esac
done
cat "$R/stages.txt"
