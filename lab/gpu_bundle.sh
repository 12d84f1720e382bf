#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs what tools/gpu_check.sh needs on a GPU machine that has no Debian packages (docs/gpu.md): run it here, on the
# Debian machine that built the tree, with DIR a folder at the top of the checkout (ignored by git, e.g.
# .gpu-bundle); copy the checkout with DIR to the GPU machine and run DIR/run.sh there (it links the checkout at
# this machine's path when it lands elsewhere: CTest's files name absolute paths).
#
#   lab/gpu_bundle.sh DIR      writes DIR/build.tar.xz (the build tree without objects), DIR/debs/*.deb
#                                (libvulkan1, vulkan-validationlayers and GLVND's libglvnd0, libglx0, libegl1,
#                                libgl1, libgles2, libopengl0: `apt-get download`),
#                                DIR/lib/ (the shared libraries of the CLI and tests beyond glibc, e.g. libcjson,
#                                libwebp) and
#                                DIR/run.sh (lab/gpu_bundle_run.sh)
#
# Environment: BUILD_DIR (default build). About 6 MB in all.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 1 ] || { echo "usage: lab/gpu_bundle.sh DIR" >&2; exit 2; }
out=$1
BUILD_DIR=${BUILD_DIR:-build}
[ -x "$BUILD_DIR/vkvit" ] && [ -f "$BUILD_DIR/CTestTestfile.cmake" ] || {
    echo "gpu_bundle.sh: no built tree with tests in '$BUILD_DIR' (tools/setup.sh --test-deps)" >&2; exit 2; }
mkdir -p "$out/debs" "$out/lib"
out=$(realpath "$out")
build_abs=$(realpath "$BUILD_DIR")

# The build tree: binaries, generated SPIR-V, CTest files; not the objects (a few MB with xz: every test binary
# embeds the same shaders).
name=$(basename "$build_abs")
tar -C "$(dirname "$build_abs")" --exclude="$name/CMakeFiles" --exclude="$name/Testing" --exclude='*.o' \
    --exclude='*.a' -cf - "$name" | xz -T0 -9 --lzma2=dict=64MiB > "$out/build.tar.xz"

# The Vulkan loader and the validation layer, as Debian ships them (unpacked there, not installed), and GLVND
# (libglvnd0, libglx0, libegl1, libgl1, libgles2, libopengl0): NVIDIA's Vulkan driver is libGLX_nvidia.so.0, which
# needs GLVND's libraries; without them the loader answers "Could not get 'vkCreateInstance' via
# 'vk_icdGetInstanceProcAddr' for ICD libGLX_nvidia.so.0" and finds no driver. On a lent H100 (2026-11-26) libglvnd0
# and libglx0 alone were not enough, neither on LD_LIBRARY_PATH nor unpacked into /; the whole set unpacked into /
# (the device machine's own recipe) was.
(cd "$out/debs" && apt-get download libvulkan1 vulkan-validationlayers libglvnd0 libglx0 libegl1 libgl1 libgles2 \
     libopengl0 2> /dev/null) || {
    echo "gpu_bundle.sh: apt-get download failed (no package archive?)" >&2; exit 1; }

# Shared libraries of the built programs that a non-Debian machine may lack: all but the C library's own.
for f in "$BUILD_DIR"/vkvit "$BUILD_DIR"/test_* "$BUILD_DIR"/startup_time; do
    [ -x "$f" ] && ldd "$f" 2> /dev/null
done | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libvulkan.so*) ;;
        *) cp -L "$lib" "$out/lib/" ;;
    esac
done

cp lab/gpu_bundle_run.sh "$out/run.sh"
printf '%s\n' "$build_abs" > "$out/build_dir.txt"
printf '%s\n' "$(pwd -P)" > "$out/source_dir.txt"
echo "gpu_bundle.sh: $(du -sh "$out" | cut -f1) in $out; there: $out/run.sh [gpu_check.sh options] OUTDIR"
