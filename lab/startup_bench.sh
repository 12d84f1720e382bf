#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Cold vs warm start: ctx + model + session creation and the first run, with an empty pipeline cache ("cold": a
# fresh vkvit cache dir and a fresh Mesa shader cache dir) and then with the cache the cold run wrote ("warm"),
# for each model file given (default: the golden models). Prints a Markdown table (docs/embedding.md).
#
#   lab/startup_bench.sh [--bin DIR] [--runs N] [--precision P] [--phases FILE] [MODEL.vkvit ...]
#
# --bin: the build directory holding startup_time (default build). --runs: warm runs per model, the median is
# reported (default 3). --precision: the sessions' precision (fp32, fp16, fp16-math; default fp32). --phases: append
# each run's INFO log (startup_time --log: instance, device, pipeline cache, weight upload, pipelines) to FILE. The machine's
# load shows up in wall times: run it on an idle machine.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/build"
RUNS=3
PRECISION=fp32
PHASES=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --precision) PRECISION=$2; shift 2 ;;
        --phases) PHASES=$2; shift 2 ;;
        -h|--help) sed -n '3,11p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || set -- "$ROOT"/tests/golden/models/vit5_*.vkvit "$ROOT"/tests/golden/models/resnet_*.vkvit
EXE="$BIN/startup_time"
[ -x "$EXE" ] || { echo "startup_bench: $EXE not built (cmake --build $BIN --target startup_time)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "| model | pipelines | cold: ctx + model + session (ms) | warm: ctx + model + session (ms) | cold first run (ms) | warm first run (ms) | cache file (bytes) | warm: ctx / model / session (ms, medians) |"
echo "|---|---|---|---|---|---|---|---|"
for model in "$@"; do
    name=$(basename "$model" .vkvit)
    dir="$TMP/$name"
    mkdir -p "$dir/vkvit" "$dir/mesa"
    run() {
        if [ -n "$PHASES" ]; then
            echo "# $name, $PRECISION, $1" >> "$PHASES"
            MESA_SHADER_CACHE_DIR="$dir/mesa" VKVIT_VALIDATION=0 "$EXE" --model "$model" --cache-dir "$dir/vkvit" \
                --precision "$PRECISION" --log 2>> "$PHASES"
        else
            MESA_SHADER_CACHE_DIR="$dir/mesa" VKVIT_VALIDATION=0 "$EXE" --model "$model" --cache-dir "$dir/vkvit" \
                --precision "$PRECISION"
        fi
    }
    if ! cold=$(run cold); then
        echo "| $name | failed (see the message above) | | | | | | |"
        continue
    fi
    total() { awk -v a="$(field "$1" ctx_ms)" -v b="$(field "$1" model_ms)" -v c="$(field "$1" session_ms)" \
              'BEGIN { printf "%.0f", a + b + c }'; }
    warm_total=""; warm_first=""; warm_ctx=""; warm_model=""; warm_session=""
    i=0
    while [ $i -lt "$RUNS" ]; do
        w=$(run warm) || break
        warm_total="$warm_total $(total "$w")"
        warm_first="$warm_first $(field "$w" first_run_ms)"
        warm_ctx="$warm_ctx $(field "$w" ctx_ms)"
        warm_model="$warm_model $(field "$w" model_ms)"
        warm_session="$warm_session $(field "$w" session_ms)"
        i=$((i + 1))
    done
    bytes=$(cat "$dir"/vkvit/*.bin 2>/dev/null | wc -c)
    echo "| $name | $(field "$cold" pipelines) | $(total "$cold") | $(echo $warm_total | tr ' ' '\n' | median) |" \
         "$(field "$cold" first_run_ms) | $(echo $warm_first | tr ' ' '\n' | median) | $bytes |" \
         "$(echo $warm_ctx | tr ' ' '\n' | median) / $(echo $warm_model | tr ' ' '\n' | median) /" \
         "$(echo $warm_session | tr ' ' '\n' | median) |"
done
