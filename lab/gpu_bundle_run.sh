#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine's side of lab/gpu_bundle.sh (copied into the bundle as run.sh): unpacks the build tree, the
# Vulkan loader and the validation layer next to itself, points the environment at them and at the GPU driver's
# manifest, and runs tools/gpu_check.sh with the given arguments. Nothing is installed; / is not touched except to
# link the checkout at the path the build was made in, when it is elsewhere here (CTest's files name that path).
#
#   BUNDLE/run.sh [--pack] [--quick] [--parts ...] OUTDIR
#                                              --pack: afterwards, OUTDIR holds only report.md, report.json and
#                                              gpu_check.tar.gz with everything (a lent machine returns few files)
#   BUNDLE/run.sh --exec COMMAND [ARGS...]     COMMAND in the same environment instead (BUILD_DIR and PYTHON set),
#                                              e.g. lab/bench_ab.py with an older CLI carried in the bundle
#
# Environment: PYTHON (a Python with PyTorch for the *_py tests and the side-by-side part; default: the first of
# python3 and /usr/bin/python3 that imports torch), VK_DRIVER_FILES (default: the NVIDIA manifest where one is).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cat "$here/build_dir.txt")   # where the tree was built, and its checkout, on the machine that bundled it
src=$(cat "$here/source_dir.txt")
# The bundle is a folder at the top of the checkout; that checkout must be where the build was made.
repo=$(dirname "$here")
[ -x "$repo/tools/gpu_check.sh" ] || { echo "run.sh: put the bundle at the top of a vkvit checkout" >&2; exit 2; }
if [ "$(realpath "$repo")" != "$(realpath -m "$src")" ]; then
    if [ -e "$src" ]; then
        echo "run.sh: the build was made in $src, which exists here and is not this checkout ($repo)" >&2; exit 2
    fi
    mkdir -p "$(dirname "$src")" && ln -s "$repo" "$src"
    echo "run.sh: linked $src -> $repo (CTest's files name the build path)"
fi
mkdir -p "$(dirname "$build")"
tar -C "$(dirname "$build")" -xJf "$here/build.tar.xz"
cd "$src"
root="$here/root"
mkdir -p "$root"
for d in "$here"/debs/*.deb; do dpkg-deb -x "$d" "$root"; done
export LD_LIBRARY_PATH="$here/lib:$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VKVIT_DEB_ROOT="$root"
if [ -z "${VK_DRIVER_FILES:-}" ]; then
    for m in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
             /etc/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$m" ] && { export VK_DRIVER_FILES=$m; break; }
    done
fi
# GLVND for NVIDIA's Vulkan driver (gpu_bundle.sh says why): on a machine with NVIDIA's manifest that lacks it, and
# as root, into / as the device machine's own recipe does (on LD_LIBRARY_PATH alone the driver still failed to start
# on a lent H100).
case "${VK_DRIVER_FILES:-}" in
    *nvidia*)
        if ! ldconfig -p 2> /dev/null | grep -q 'libEGL\.so\.1 ' && [ "$(id -u)" = 0 ]; then
            for d in "$here"/debs/lib{glvnd0,glx0,egl1,gl1,gles2,opengl0}_*.deb; do
                if [ -f "$d" ]; then dpkg-deb -x "$d" /; fi
            done
            ldconfig
            echo "run.sh: unpacked GLVND into /"
        fi
        egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
        if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f "$egl" ]; then
            export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
        fi ;;
esac
py=${PYTHON:-}
if [ -z "$py" ]; then
    for c in python3 /usr/bin/python3; do
        if command -v "$c" > /dev/null && "$c" -c 'import torch' 2> /dev/null; then py=$(command -v "$c"); break; fi
    done
fi
if [ -n "$py" ] && [ "$py" != /usr/bin/python3 ]; then  # the *_py tests name /usr/bin/python3 (CMakeLists.txt)
    sed -i "s#/usr/bin/python3#$py#g" "$build/CTestTestfile.cmake"
    export PYTHON=$py
fi
echo "run.sh: driver manifest ${VK_DRIVER_FILES:-none set, the loader searches}, python ${py:-none with torch}"
if [ "${1:-}" = --exec ]; then
    shift
    [ $# -gt 0 ] || { echo "run.sh: --exec needs a command" >&2; exit 2; }
    export BUILD_DIR=$build PYTHON=${py:-python3}
    exec "$@"
fi
if [ "${1:-}" = --pack ]; then
    shift
    out=${!#}                                   # gpu_check.sh's OUTDIR is its last argument
    status=0
    BUILD_DIR=$build tools/gpu_check.sh "$@" || status=$?
    if [ -d "$out" ]; then
        tar -C "$out" -czf "/tmp/gpu_check.$$.tar.gz" . &&
            find "$out" -mindepth 1 -maxdepth 1 ! -name report.md ! -name report.json -exec rm -rf {} + &&
            mv "/tmp/gpu_check.$$.tar.gz" "$out/gpu_check.tar.gz"
    fi
    exit $status
fi
BUILD_DIR=$build exec tools/gpu_check.sh "$@"
