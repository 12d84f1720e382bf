#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 18's training run on a lent GPU machine, in one command: decodes the CIFAR-10 tarball once, trains the
# GPU recipe of lab/train_cifar.py for each model with a wall-clock budget (the cosine schedule runs over the
# training time, so each run ends fully annealed whatever the machine's speed), side by side or one after the
# other, and writes the exported models (fp16, each < 16 MiB), the training logs and a GPU utilisation log to OUT.
#
#   lab/gpu_train_cifar.sh [--minutes M] [--arch "vit5 vil"] [--sequential] [--data TAR] [--init-dir DIR]
#                            [--teacher-epochs N [--teachers K] | --teacher FILE...] [--finish-within T] OUT
#
# --minutes: training minutes per model (default 8; evaluation every 10 epochs and start-up come on top, about
# 40 s). Side by side (default) both models share the GPU for M minutes; --sequential gives each the GPU alone,
# one after the other (2 x M minutes). --data: the JPEG tarball (default ../shared/data/cifar10-jpg.tar.gz; on a
# lent machine copy it into the bundle folder, which travels: `cp ../shared/data/cifar10-jpg.tar.gz .gpu-bundle/`).
# --init-dir: continue the models in DIR (DIR/<arch>_cifar10.vkvit, e.g. assets/models) with a new schedule instead
# of starting from random weights (train_cifar.py --init-from), so that leases too short for the recipe add up.
# --teacher-epochs N: first train the ResNet-9 teacher of lab/cifar_teacher.py for N epochs (OUT/teacher_resnet9.pt,
# about 13 MB; 40 epochs took 37 s on an H200), then distil it into each model (train_cifar.py --teacher);
# --teachers K trains K of them side by side (seeds 0..K-1, OUT/teacher_resnet9_sS.pt; 3 took 86 s) and distils
# their mean probabilities; TEACHER_ARGS="--width 1.5" makes them wider. --teacher FILE (repeatable) distils from
# teachers trained earlier. --finish-within T: shorten the training minutes so that the whole command, decoding and
# teachers included, ends within T minutes (a lease's command limit).
# Environment: PY (a Python with PyTorch, default python3), DEVICE (default cuda), SIZE (large; `demo` with
# DEVICE=cpu is the dry run this machine can do), TRAIN_ARGS (more train_cifar.py options), TEACHER_ARGS (more
# cifar_teacher.py options, e.g. `--train-limit 1024` for a dry run). Measured on an H200 (2026-11-26, eager):
# 8 minutes side by side gave ViT-5 72 epochs and ViL 34.
set -uo pipefail
cd "$(dirname "$0")/.."
minutes=8 archs="vit5 vil" sequential=0 data=../shared/data/cifar10-jpg.tar.gz out= init_dir=
teachers=() teacher_epochs=0 teacher_count=1 finish_within=0
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes=$2; shift 2 ;;
        --arch) archs=$2; shift 2 ;;
        --sequential) sequential=1; shift ;;
        --data) data=$2; shift 2 ;;
        --init-dir) init_dir=$2; shift 2 ;;
        --teacher) teachers+=("$2"); shift 2 ;;
        --teachers) teacher_count=$2; shift 2 ;;
        --teacher-epochs) teacher_epochs=$2; shift 2 ;;
        --finish-within) finish_within=$2; shift 2 ;;
        -h|--help) sed -n '3,26p' "$0"; exit 0 ;;
        -*) echo "gpu_train_cifar.sh: unknown option $1" >&2; exit 2 ;;
        *) out=$1; shift ;;
    esac
done
[ -n "$out" ] || { echo "usage: lab/gpu_train_cifar.sh [--minutes M] [--arch LIST] [--sequential] [--data TAR]" \
                        "[--init-dir DIR] [--teacher-epochs N [--teachers K] | --teacher FILE...]" \
                        "[--finish-within T] OUT" >&2
                   exit 2; }
[ -f "$data" ] || { echo "gpu_train_cifar.sh: $data not found (--data)" >&2; exit 2; }
for t in "${teachers[@]}"; do
    [ -f "$t" ] || { echo "gpu_train_cifar.sh: $t not found (--teacher)" >&2; exit 2; }
done
[ "$teacher_count" -ge 1 ] 2> /dev/null || { echo "gpu_train_cifar.sh: --teachers wants a count >= 1" >&2; exit 2; }
[ "$teacher_count" = 1 ] || [ "$teacher_epochs" -gt 0 ] ||
    { echo "gpu_train_cifar.sh: --teachers K trains K teachers: it needs --teacher-epochs N" >&2; exit 2; }
PY=${PY:-python3} DEVICE=${DEVICE:-cuda} SIZE=${SIZE:-large}
t_start=$(date +%s)
mkdir -p "$out"
cache=$(mktemp -d)
trap 'rm -rf "$cache"; [ -n "${smi:-}" ] && kill "$smi" 2> /dev/null' EXIT
export PYTHONUNBUFFERED=1

if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv -l 10 \
        > "$out/gpu_util.csv" 2>&1 &
    smi=$!
fi
"$PY" -c "import sys; sys.path[:0] = ['tools/reference', 'tools', 'lab']
import train_cifar; train_cifar.load_data(sys.argv[1], sys.argv[2])" "$data" "$cache" || exit 1
if [ "$teacher_epochs" -gt 0 ]; then     # K teachers side by side: a ResNet-9 alone leaves an H200 half idle
    teachers=() pids=
    for seed in $(seq 0 $((teacher_count - 1))); do
        name=teacher_resnet9; [ "$teacher_count" -gt 1 ] && name=teacher_resnet9_s$seed
        teachers+=("$out/$name.pt")
        "$PY" lab/cifar_teacher.py --device "$DEVICE" --epochs "$teacher_epochs" --seed "$seed" --data "$data" \
            --cache "$cache" ${TEACHER_ARGS:-} --out "$out/$name.pt" > "$out/train_$name.log" 2>&1 &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || { cat "$out"/train_teacher*.log; kill $pids 2> /dev/null; exit 1; }; done
    cat "$out"/train_teacher*.log
fi

# --finish-within: what is left after decoding and the teacher (shared by the models with --sequential), less, for
# each model, the hard stop's slack (below) and a minute for start-up, the last evaluation and the export.
if [ "$finish_within" != 0 ]; then
    runs=1
    [ "$sequential" = 1 ] && runs=$(echo $archs | wc -w)
    minutes=$(awk -v m="$minutes" -v t="$finish_within" -v used="$(( $(date +%s) - t_start ))" -v n="$runs" \
              'BEGIN { left = (t - used / 60) / n - 1.7; printf "%.2f", (left < m ? left : m) }')
    awk -v m="$minutes" 'BEGIN { exit !(m > 0.5) }' || {
        echo "gpu_train_cifar.sh: only $minutes minutes left for training (--finish-within)" >&2; exit 1; }
    echo "gpu_train_cifar.sh: $minutes training minutes per model"
fi
# The hard stop (--time-limit-min: evaluate, export, stop) sits 40 s past the budget: evaluations do not count as
# training time, so a run whose budget is spent ends by itself just before it.
limit=$(awk -v m="$minutes" 'BEGIN { print m + 0.7 }')
train() {   # ARCH: trains, exports OUT/ARCH_large_cifar10.vkvit, logs to OUT/train_ARCH.log
    local start=() from="$init_dir/$1_cifar10.vkvit"      # how the run starts: weights to continue, a teacher
    for t in "${teachers[@]}"; do start+=(--teacher "$t"); done
    if [ -n "$init_dir" ]; then
        [ -f "$from" ] || { echo "gpu_train_cifar.sh: no $from" >&2; return 2; }
        start+=(--init-from "$from")
    fi
    "$PY" lab/train_cifar.py "${start[@]}" --arch "$1" --recipe gpu --device "$DEVICE" --size "$SIZE" --cache "$cache" \
        --data "$data" --out "$out/$1_large_cifar10.vkvit" --time-budget-min "$minutes" --time-limit-min "$limit" \
        ${TRAIN_ARGS:-} > "$out/train_$1.log" 2>&1
    local rc=$?
    echo "gpu_train_cifar.sh: $1 exit $rc, $(grep -h 'finished\|time limit' "$out/train_$1.log" | tail -1)"
    return $rc
}
status=0
if [ "$sequential" = 1 ]; then
    for a in $archs; do train "$a" || status=1; done
else
    pids=
    for a in $archs; do train "$a" & pids="$pids $!"; done
    for p in $pids; do wait "$p" || status=1; done
fi
grep -h -E "parameters|fused|torch.compile|epoch [0-9]+ done|finished|time limit|Error" "$out"/train_*.log
exit $status
