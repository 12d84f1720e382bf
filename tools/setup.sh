#!/usr/bin/env bash
# Installs what vkvit needs (Debian packages; nothing is downloaded from elsewhere) and builds it into build/.
#
#   tools/setup.sh              runtime + build dependencies, then a Release build
#   tools/setup.sh --test-deps  also the test dependencies (validation layers, PyTorch for goldens)
#   tools/setup.sh --no-deps    build only
#
# Environment: BUILD_DIR (default build), CMAKE_ARGS (extra configure arguments), e.g. -DVKVIT_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."

# spirv-tools: spirv-opt unrolls the CPU GEMM's build-time variants (lavapipe creates their pipelines 2-3x faster;
# without it the build leaves them out).
RUNTIME_DEPS=(build-essential cmake pkg-config libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools libstb-dev
              libcjson-dev libwebp-dev mesa-vulkan-drivers)
TEST_DEPS=(vulkan-validationlayers spirv-tools clang libclang-rt-14-dev python3-torch python3-numpy python3-pil
           libopenblas0-pthread)
TEST_DEPS+=(python3-pytest python3-dask python3-distributed)   # tests/python: the binding, tools/bulk_classify.py

deps=(); install=1
for arg in "$@"; do
    case "$arg" in
        --test-deps) deps+=("${TEST_DEPS[@]}") ;;
        --no-deps) install=0 ;;
        *) echo "setup.sh: unknown option $arg" >&2; exit 1 ;;
    esac
done
deps+=("${RUNTIME_DEPS[@]}")

if [ "$install" = 1 ]; then
    missing=()
    for p in "${deps[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
        echo "setup.sh: installing ${missing[*]}"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
fi

BUILD_DIR=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} > /dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "setup.sh: built $BUILD_DIR/vkvit"
