#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian 13 lane: the README's two commands inside a Debian 13 (trixie) root, with Mesa from trixie-backports.
#
#   tools/debian13.sh                      make (or reuse) the root, copy the tree into it, run the two commands
#   tools/debian13.sh --ctest-args "-R X"  the same, the test command limited to the CTest entries matching X
#   tools/debian13.sh --shell              an interactive shell in the root, on the copied tree
#
# Why: Debian 13's glslang (15) compiles GL_KHR_cooperative_matrix, and Mesa 26 in trixie-backports has a lavapipe
# that lists VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2, with validation layers 1.4 that know them.
# Debian 12 has neither, so this lane is where vkvit's builds and tests meet them.
#
# Everything comes from Debian's archive: debootstrap makes the root (once; it is kept in ROOT_DIR and reused), and
# tools/setup.sh installs vkvit's dependencies inside it with apt-get. The tree is copied in fresh every run (the
# files git tracks, plus untracked ones it does not ignore), so the root's build is a clean one; shared/ beside the
# repository (the test data) is bound read-only at the same relative place. Needs root (debootstrap, chroot, mounts).
#
# Environment: VKVIT_DEBIAN13_ROOT (default /var/cache/vkvit-debian13), VKVIT_DEBIAN13_TREE (the copy's place in the
# root, default /work/vkvit: another name lets two checkouts use one root at once), DEBIAN_MIRROR (default
# http://deb.debian.org/debian), CTEST_JOBS (passed to tools/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
root_dir=${VKVIT_DEBIAN13_ROOT:-/var/cache/vkvit-debian13}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tree=${VKVIT_DEBIAN13_TREE:-/work/vkvit}
case "$tree" in
    /work/shared | /work/*/* | /work/*[!A-Za-z0-9._-]*) echo "debian13.sh: VKVIT_DEBIAN13_TREE=$tree: want /work/NAME" >&2; exit 1 ;;
    /work/?*) ;;
    *) echo "debian13.sh: VKVIT_DEBIAN13_TREE=$tree: want /work/NAME (shared/ is bound beside it)" >&2; exit 1 ;;
esac
ctest_args="" shell=0
while [ $# -gt 0 ]; do
    case "$1" in
        --ctest-args) ctest_args=$2; shift 2 ;;
        --shell) shell=1; shift ;;
        -h|--help) sed -n '3,20p' "$0"; exit 0 ;;
        *) echo "debian13.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "debian13.sh: needs root (debootstrap, chroot and bind mounts)" >&2; exit 1; }
start=$(date +%s)
say() { echo "debian13.sh: $* ($(( $(date +%s) - start )) s)"; }

root=$root_dir/root
if [ ! -f "$root/.vkvit-root-ready" ]; then
    command -v debootstrap > /dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap; }
    say "making a Debian 13 root in $root with debootstrap (once; later runs reuse it)"
    rm -rf "$root"
    mkdir -p "$root_dir"
    debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$mirror" > "$root_dir/debootstrap.log" 2>&1 || {
        tail -20 "$root_dir/debootstrap.log" >&2; echo "debian13.sh: debootstrap failed ($root_dir/debootstrap.log)" >&2
        exit 1; }
    rm -f "$root/etc/apt/sources.list"
    printf 'Types: deb\nURIs: %s\nSuites: trixie trixie-updates trixie-backports\nComponents: main\n%s\n' "$mirror" \
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" > "$root/etc/apt/sources.list.d/debian.sources"
    touch "$root/.vkvit-root-ready"
fi

# Mounts for the chroot, undone on every exit.
mounted=()
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2> /dev/null || true; done
}
trap cleanup EXIT
bind() { # bind SRC DST [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    mounted+=("$2")
    [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
    return 0
}
mkdir -p "$root/proc" "$root/sys" "$root/dev"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount -t sysfs sysfs "$root/sys" && mounted+=("$root/sys")
bind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/dev/shm" && mounted+=("$root/dev/shm")
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2> /dev/null || true

# A fresh copy of the tree at $tree (/work/vkvit), and shared/ beside it as ../shared.
say "copying the tree into the root ($tree)"
rm -rf "${root:?}$tree"
mkdir -p "$root$tree"
git -C "$repo" ls-files -z --cached --others --exclude-standard |
    (cd "$repo" && xargs -0 -r tar --no-recursion -cf - --ignore-failed-read 2> /dev/null) | tar -C "$root$tree" -xf -
if [ -d "$repo/../shared" ]; then bind "$(cd "$repo/../shared" && pwd)" "$root/work/shared" ro; fi

in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" CTEST_JOBS="${CTEST_JOBS:-}" CTEST_ARGS="$ctest_args" \
        DEBIAN_FRONTEND=noninteractive bash -c "cd $tree && $1"
}
if [ "$shell" = 1 ]; then
    in_root "exec bash -i"
    exit 0
fi
say "the README's first command (Mesa from trixie-backports)"
in_root "tools/setup.sh --mesa-backports && ./build/vkvit info | head -12 && ./build/vkvit classify assets/images/cat.png"
say "the README's second command${ctest_args:+ (CTEST_ARGS=$ctest_args)}"
in_root "tools/test.sh"
say "passed"
