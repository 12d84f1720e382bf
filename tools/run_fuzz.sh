#!/bin/sh
# Builds the model-file fuzzer with clang (libFuzzer + ASan + UBSan; the reader sources are compiled in, so they are
# instrumented) and runs it for SECONDS. Exits non-zero when the fuzzer finds a crash, a sanitizer report or a leak;
# the reproducer is written next to the binary as crash-* / leak-* / timeout-*.
#
#   tools/run_fuzz.sh SECONDS [extra libFuzzer flags, e.g. -jobs=2 -workers=2]
#
# Environment: VKVIT_FUZZ_DIR (default build-fuzz/ in the repository) holds the binary, the growing corpus and the
# artifacts; CC (default clang). Seeds come from tests/fuzz/corpus/ (regenerate with tests/fuzz/make_corpus.py).
set -eu

if [ $# -lt 1 ]; then
    echo "usage: tools/run_fuzz.sh SECONDS [libFuzzer flags]" >&2
    exit 1
fi
seconds=$1
shift
case $seconds in
    '' | *[!0-9]*) echo "run_fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 1 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
out=${VKVIT_FUZZ_DIR:-$root/build-fuzz}
cc=${CC:-clang}
mkdir -p "$out/corpus"

# The reader and its error channel; nothing here needs Vulkan beyond the public header's types.
sources="$root/tests/fuzz/fuzz_model_file.c $root/src/model/safetensors.c $root/src/model/config.c
         $root/src/model/model_file.c $root/src/common.c $root/src/vk/platform.c $root/src/arch/*.c"
# shellcheck disable=SC2086
"$cc" -std=c11 -g -O1 -D_GNU_SOURCE -DVKVIT_ARCH_READER_ONLY -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
    -I"$root/include" -I"$root/src" $sources -lcjson -lm -o "$out/fuzz_model_file"

# New inputs go to $out/corpus; tests/fuzz/corpus is read for seeds only (libFuzzer writes to the first dir).
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$out/fuzz_model_file" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -dict="$root/tests/fuzz/model_file.dict" -artifact_prefix="$out/" "$@" \
    "$out/corpus" "$root/tests/fuzz/corpus"
