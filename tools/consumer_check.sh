#!/usr/bin/env bash
# Builds and runs tests/consumer/ against vkvit the three ways an application gets it, each linked shared and static:
#   1. vkvit configured for prefix /usr and installed into a staging root (DESTDIR), the layout a Debian package has
#      (lib/<multiarch>/, include/, lib/<multiarch>/cmake/vkvit/, lib/<multiarch>/pkgconfig/vkvit.pc); the installed
#      files are checked to hold no path of this machine (source or build tree);
#   2. find_package(vkvit CONFIG) with CMAKE_PREFIX_PATH = the staged /usr;
#   3. pkg-config (PKG_CONFIG_PATH = the staged .pc folder), through CMake and through a plain `cc` line;
#   4. add_subdirectory(<this checkout>) (vkvit as a subproject: no tests, tools or examples built).
# Every consumer loads assets/models/vil_cifar10.vkvit (the shared builds from a path, the static ones from memory),
# classifies a painted picture with the validation layer on, and must print its top-1 class.
#
#   tools/consumer_check.sh            (VKVIT_CONSUMER_DIR: work folder, default a new one under /tmp, removed at
#                                       the end unless KEEP=1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${VKVIT_CONSUMER_DIR:-$(mktemp -d /tmp/vkvit-consumer.XXXXXX)}
[ "${KEEP:-0}" = 1 ] || [ -n "${VKVIT_CONSUMER_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
jobs=$(nproc)
model=$root/assets/models/vil_cifar10.vkvit
export VKVIT_VALIDATION=${VKVIT_VALIDATION:-1} VKVIT_CACHE_DIR=$work/pipeline-cache
say() { echo "consumer_check: $*"; }
fail() { echo "consumer_check: FAIL: $*" >&2; exit 1; }

say "building vkvit for prefix /usr and staging its install in $work/stage"
cmake -S "$root" -B "$work/vkvit" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr -DVKVIT_BUILD_TESTS=OFF \
      -DVKVIT_BUILD_EXAMPLES=OFF > "$work/vkvit-configure.log"
cmake --build "$work/vkvit" -j"$jobs" > "$work/vkvit-build.log"
DESTDIR=$work/stage cmake --install "$work/vkvit" > "$work/vkvit-install.log"
prefix=$work/stage/usr
pc=$(find "$prefix" -name vkvit.pc)
[ -n "$pc" ] || fail "no vkvit.pc installed"
libdir=$(dirname "$(dirname "$pc")")
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
if [ -n "$multiarch" ] && [ "$libdir" != "$prefix/lib/$multiarch" ]; then
    fail "libdir is $libdir, expected the multiarch folder $prefix/lib/$multiarch"
fi
for f in "$libdir/libvkvit.a" "$libdir/libvkvit.so" "$prefix/include/vkvit.h" "$libdir/cmake/vkvit/vkvitConfig.cmake" \
         "$libdir/cmake/vkvit/vkvitConfigVersion.cmake" "$libdir/cmake/vkvit/vkvitTargets.cmake" "$prefix/bin/vkvit"; do
    [ -e "$f" ] || fail "missing installed file $f"
done
if grep -rlF -e "$root" -e "$work" "$prefix"; then
    fail "the files above hold a path of this machine"
fi
grep -q '^Libs.private: .*-lcjson' "$pc" || fail "vkvit.pc has no Libs.private with -lcjson"

run() { # name, binary, extra args
    local out
    out=$("$2" "$model" "${@:3}") || fail "$1 exited with $?"
    echo "$out" | grep -q '^top-1: class ' || fail "$1 printed no top-1 line: $out"
    say "ok $1: $out"
}

say "find_package(vkvit) against the staged prefix"
cmake -S "$root/tests/consumer" -B "$work/package" -DCONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$work/package" -j"$jobs" > /dev/null
run "find_package, shared" "$work/package/consumer_shared"
run "find_package, static" "$work/package/consumer_static" --memory

say "pkg-config against the staged prefix"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cmake -S "$root/tests/consumer" -B "$work/pkgconfig" -DCONSUMER_MODE=pkg-config > /dev/null
cmake --build "$work/pkgconfig" -j"$jobs" > /dev/null
run "pkg-config (CMake), shared" "$work/pkgconfig/consumer_shared"
run "pkg-config (CMake), static" "$work/pkgconfig/consumer_static" --memory
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$root/tests/consumer/main.c" -o "$work/pkgconfig/consumer_cc" \
   $(pkg-config --cflags --libs vkvit) -Wl,-rpath,"$libdir"
run "pkg-config (cc), shared" "$work/pkgconfig/consumer_cc"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -DVKVIT_STATIC "$root/tests/consumer/main.c" -o "$work/pkgconfig/consumer_cc_static" \
   $(pkg-config --cflags vkvit) -L"$libdir" -Wl,-Bstatic -lvkvit -Wl,-Bdynamic \
   $(pkg-config --libs --static vkvit | sed 's/ -lvkvit\b//; s/^-lvkvit\b//; s/-L[^ ]* //')
run "pkg-config (cc), static" "$work/pkgconfig/consumer_cc_static" --memory
unset PKG_CONFIG_PATH

say "add_subdirectory(vkvit)"
cmake -S "$root/tests/consumer" -B "$work/subdir" -DCONSUMER_MODE=subdirectory -DVKVIT_SOURCE_DIR="$root" \
      -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$work/subdir" -j"$jobs" > "$work/subdir-build.log"
for t in vkvit-cli test_model_file embed_frame; do
    if [ -n "$(find "$work/subdir" -name "$t" -type f)" ]; then fail "the subproject built $t"; fi
done
run "add_subdirectory, shared" "$work/subdir/consumer_shared"
run "add_subdirectory, static" "$work/subdir/consumer_static" --memory

say "all consumer builds ran"
