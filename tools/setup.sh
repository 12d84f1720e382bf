#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what vkvit needs (Debian packages; nothing is downloaded from elsewhere) and builds it into build/.
#
#   tools/setup.sh              runtime + build dependencies, then a Release build
#   tools/setup.sh --test-deps  also the test dependencies (validation layers, PyTorch for goldens)
#   tools/setup.sh --no-deps    build only
#   tools/setup.sh --mesa-backports
#                               Debian 13: Mesa (lavapipe) from trixie-backports (Mesa 26: its lavapipe has
#                               VK_KHR_cooperative_matrix), adding that suite to apt's sources if it is missing
#
# Debian 12 (bookworm) and 13 (trixie) are supported; the package names that differ between them are chosen from
# /etc/os-release. Environment: BUILD_DIR (default build), CMAKE_ARGS (extra configure arguments), e.g.
# -DVKVIT_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."

# spirv-tools: spirv-opt unrolls the CPU GEMM's build-time variants (lavapipe creates their pipelines 2-3x faster;
# without it the build leaves them out).
RUNTIME_DEPS=(build-essential cmake pkg-config libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools libstb-dev
              libcjson-dev libwebp-dev mesa-vulkan-drivers)
# The clang runtime (the fuzz targets' libFuzzer and sanitizers) is versioned by the release's default clang.
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
case "$codename" in
    bookworm) clang_rt=libclang-rt-14-dev ;;
    trixie) clang_rt=libclang-rt-19-dev ;;
    *) clang_rt=libclang-rt-dev ;;
esac
TEST_DEPS=(vulkan-validationlayers spirv-tools clang "$clang_rt" python3-torch python3-numpy python3-pil
           libopenblas0-pthread)
TEST_DEPS+=(python3-pytest python3-dask python3-distributed)   # tests/python: the binding, tools/bulk_classify.py

deps=(); install=1; mesa_backports=0
for arg in "$@"; do
    case "$arg" in
        --test-deps) deps+=("${TEST_DEPS[@]}") ;;
        --no-deps) install=0 ;;
        --mesa-backports) mesa_backports=1 ;;
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
    if [ "$mesa_backports" = 1 ]; then
        [ "$codename" = trixie ] || { echo "setup.sh: --mesa-backports is for Debian 13 (trixie); this is" \
                                           "'${codename:-an unknown release}'" >&2; exit 1; }
        sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
        if ! grep -rqs "trixie-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
            echo "setup.sh: adding trixie-backports to apt's sources (/etc/apt/sources.list.d/vkvit-backports.sources)"
            printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie-backports\nComponents: main\n%s\n' \
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
                $sudo tee /etc/apt/sources.list.d/vkvit-backports.sources > /dev/null
            $sudo apt-get update -q
        fi
        # Mesa's version carries "~bpo" once it comes from the backports.
        case "$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null)" in
            *bpo*) ;;
            *) echo "setup.sh: Mesa (mesa-vulkan-drivers) from trixie-backports"
               DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends -t trixie-backports \
                   mesa-vulkan-drivers ;;
        esac
    fi
fi

BUILD_DIR=${BUILD_DIR:-build}
# shellcheck disable=SC2086
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} > /dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "setup.sh: built $BUILD_DIR/vkvit"
