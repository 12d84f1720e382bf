#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds a fuzzer with clang (libFuzzer + ASan + UBSan; the sources under test are compiled in, so they are
# instrumented) and runs it for SECONDS. Exits non-zero when the fuzzer finds a crash, a sanitizer report, a leak,
# a timeout or an out-of-memory; the reproducer is written next to the binary as crash-* / leak-* / timeout-* / oom-*.
#
#   tools/run_fuzz.sh SECONDS [extra libFuzzer flags, e.g. -jobs=2 -workers=2]
#
# SECONDS 0 runs every seed once and stops (a replay: deterministic, what CI runs for the image target).
# Environment: VKVIT_FUZZ_TARGET picks the target: model (default: the model-file reader, tests/fuzz/
# fuzz_model_file.c, seeds tests/fuzz/corpus/ from tests/fuzz/make_corpus.py) or image (the CLI's image decoder with
# stb_image and libwebp, tests/fuzz/fuzz_image.c, seeds tests/fuzz/image_corpus/ from
# tests/fuzz/make_image_corpus.py). VKVIT_FUZZ_DIR (default build-fuzz/ in the repository; build-fuzz-image/ for the
# image target) holds the binary, the growing corpus and the artifacts; CC (default clang).
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
target=${VKVIT_FUZZ_TARGET:-model}
cc=${CC:-clang}
warnings="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
case $target in
model)
    out=${VKVIT_FUZZ_DIR:-$root/build-fuzz}
    mkdir -p "$out/corpus"
    # The reader and its error channel; nothing here needs Vulkan beyond the public header's types.
    sources="$root/tests/fuzz/fuzz_model_file.c $root/src/model/safetensors.c $root/src/model/config.c
             $root/src/model/model_file.c $root/src/common.c $root/src/vk/platform.c $root/src/arch/*.c"
    # shellcheck disable=SC2086
    "$cc" -std=c11 -g -O1 -D_GNU_SOURCE -DVKVIT_ARCH_READER_ONLY -fno-omit-frame-pointer \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $warnings \
        -I"$root/include" -I"$root/src" $sources -lcjson -lm -o "$out/fuzz_model_file"
    binary=fuzz_model_file max_len=65536 dict=model_file.dict seeds=corpus
    ;;
image)
    out=${VKVIT_FUZZ_DIR:-$root/build-fuzz-image}
    mkdir -p "$out/corpus"
    # The decoder as the CLI compiles it (stb_image inside image_decode.c; Debian's libwebp, not instrumented).
    # shellcheck disable=SC2086
    "$cc" -std=c11 -g -O1 -D_GNU_SOURCE -fno-omit-frame-pointer \
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $warnings \
        -I"$root/include" -I"$root/tools/cli" -I/usr/include/stb \
        "$root/tests/fuzz/fuzz_image.c" "$root/tools/cli/image_decode.c" -lwebp -lm -o "$out/fuzz_image"
    binary=fuzz_image max_len=262144 dict=image.dict seeds=image_corpus
    ;;
*)
    echo "run_fuzz.sh: VKVIT_FUZZ_TARGET must be model or image, got '$target'" >&2
    exit 1
    ;;
esac

# New inputs go to $out/corpus; the committed seeds are read only (libFuzzer writes to the first dir).
if [ "$seconds" = 0 ]; then limit="-runs=0"; else limit="-max_total_time=$seconds"; fi
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
"$out/$binary" \
    $limit -timeout=10 -rss_limit_mb=2048 -max_len=$max_len -print_final_stats=1 \
    -dict="$root/tests/fuzz/$dict" -artifact_prefix="$out/" "$@" \
    "$out/corpus" "$root/tests/fuzz/$seeds"
