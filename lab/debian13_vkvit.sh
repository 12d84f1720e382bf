#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The vkvit CLI that tools/debian13.sh built in the Debian 13 root, run on this host with the root's own libraries
# and its Vulkan driver (Mesa 26's lavapipe from trixie-backports), without a chroot: the same paths, files and /tmp
# as a host program, so a benchmark can alternate it with the host's build (Mesa 22.3) in one run:
#
#   /usr/bin/python3 tools/bench_gemm.py --vkvit-also mesa26=lab/debian13_vkvit.sh
#   lab/debian13_vkvit.sh info
#
# Through the root's dynamic loader and library path (every library, the Vulkan loader and the LLVM that llvmpipe
# uses come from the root), and VK_DRIVER_FILES naming the root's lavapipe manifest, so the host's Mesa is never
# loaded. Its Mesa shader cache is its own (MESA_SHADER_CACHE_DIR, default ~/.cache/vkvit-mesa26). Run
# tools/debian13.sh once first. Environment: VKVIT_DEBIAN13_ROOT, VKVIT_DEBIAN13_TREE (as tools/debian13.sh).
set -euo pipefail
root=${VKVIT_DEBIAN13_ROOT:-/var/cache/vkvit-debian13}/root
tree=${VKVIT_DEBIAN13_TREE:-/work/vkvit}
cli=$root$tree/build/vkvit
[ -x "$cli" ] || { echo "debian13_vkvit.sh: no $cli (run tools/debian13.sh first)" >&2; exit 1; }
libs=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=$root/usr/share/vulkan/icd.d/lvp_icd.json VK_ICD_FILENAMES=
export MESA_SHADER_CACHE_DIR=${MESA_SHADER_CACHE_DIR:-$HOME/.cache/vkvit-mesa26}
export VK_LAYER_PATH=$root/usr/share/vulkan/explicit_layer.d
exec "$root/lib64/ld-linux-x86-64.so.2" --library-path "$libs" "$cli" "$@"
