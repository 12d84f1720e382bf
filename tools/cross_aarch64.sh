#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Cross-compiles the vkvit library and CLI for aarch64 Linux on Debian 12 (amd64 build machine) and checks that
# the results are ARM aarch64 binaries. CI calls it from .ci/run.
#
#   tools/cross_aarch64.sh [--install] [--build-dir DIR]
#
# --install (as root): enables the arm64 architecture (dpkg --add-architecture arm64, apt-get update) and installs
#   crossbuild-essential-arm64 plus the arm64 -dev packages vkvit links or includes: libcjson-dev:arm64,
#   libvulkan-dev:arm64, libstb-dev:arm64, libwebp-dev:arm64 (the CLI's WebP decoding). libvulkan-volk-dev (volk.c
#   as source, Architecture: all), glslang-tools and spirv-tools (spirv-opt unrolls the CPU GEMM's build-time
#   variants; both run on the build machine) are the build machine's. Multi-Arch: same packages must have the same
#   version for amd64 and arm64, so the amd64 ones are upgraded alongside.
# Without --install the packages must already be there.
# --build-dir: default build-aarch64. Configures with cmake/toolchains/aarch64-linux-gnu.cmake, builds the
#   library (shared and static), the CLI and the examples (no tests: they need a GPU), then runs `file` on each.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build-aarch64"
INSTALL=0
while [ $# -gt 0 ]; do
    case "$1" in
        --install) INSTALL=1; shift ;;
        --build-dir) BUILD=$2; shift 2 ;;
        -h|--help) sed -n '3,18p' "$0"; exit 0 ;;
        *) echo "cross_aarch64: unknown argument $1" >&2; exit 2 ;;
    esac
done
BUILD=$(realpath -m "$BUILD")                       # the checks below cd into it

if [ "$INSTALL" = 1 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        crossbuild-essential-arm64 cmake glslang-tools spirv-tools libvulkan-volk-dev file \
        libcjson-dev libcjson-dev:arm64 libvulkan-dev libvulkan-dev:arm64 libstb-dev libstb-dev:arm64 \
        libwebp-dev libwebp-dev:arm64
fi

for tool in aarch64-linux-gnu-gcc cmake glslangValidator file; do
    command -v "$tool" > /dev/null || { echo "cross_aarch64: $tool not found (run with --install)" >&2; exit 1; }
done
[ -e /usr/lib/aarch64-linux-gnu/libcjson.so ] || {
    echo "cross_aarch64: libcjson-dev:arm64 is not installed (run with --install)" >&2; exit 1; }
[ -e /usr/lib/aarch64-linux-gnu/libwebp.so ] || {
    echo "cross_aarch64: libwebp-dev:arm64 is not installed (run with --install)" >&2; exit 1; }

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchains/aarch64-linux-gnu.cmake" \
      -DCMAKE_BUILD_TYPE=Release -DVKVIT_WERROR=ON -DVKVIT_BUILD_TESTS=OFF -DVKVIT_BUILD_TOOLS=ON \
      -DVKVIT_BUILD_EXAMPLES=ON
cmake --build "$BUILD" -j"$(nproc)"

status=0
for f in "$BUILD/libvkvit.so" "$BUILD/libvkvit.a" "$BUILD/vkvit" "$BUILD/embed_frame" "$BUILD/startup_time"; do
    if [ "${f%.a}" != "$f" ]; then
        # An archive: check its first object.
        obj=$(cd "$BUILD" && aarch64-linux-gnu-ar t "$f" | head -n 1)
        mkdir -p "$BUILD/ar-check"                    # inside the build folder: nothing left in /tmp
        desc=$(cd "$BUILD/ar-check" && aarch64-linux-gnu-ar x "$f" "$obj" && file -b "$obj")
    else
        desc=$(file -bL "$f")
    fi
    case "$desc" in
        *"ARM aarch64"*) echo "ok   $(basename "$f"): $desc" ;;
        *) echo "FAIL $(basename "$f"): $desc" >&2; status=1 ;;
    esac
done
exit $status
