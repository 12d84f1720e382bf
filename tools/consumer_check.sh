#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs tests/consumer/ against vkvit the three ways an application gets it, each linked shared and static:
#   1. vkvit configured for prefix /usr and installed into a staging root (DESTDIR), the layout a Debian package has
#      (lib/<multiarch>/, include/, lib/<multiarch>/cmake/vkvit/, lib/<multiarch>/pkgconfig/vkvit.pc); the installed
#      files are checked to hold no path of this machine (source or build tree), and the tools (vkvit-convert,
#      vkvit-bulk-classify), man pages and bash / zsh completion to be there and to work;
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

say "the installed tools, man pages and shell completion"
for f in bin/vkvit-convert bin/vkvit-bulk-classify share/vkvit/tools/convert.py share/vkvit/tools/vkvit_file.py \
         share/vkvit/tools/bulk_classify.py share/vkvit/python/vkvit/__init__.py share/vkvit/python/vkvit/_lib.py \
         share/man/man1/vkvit.1 share/man/man1/vkvit-classify.1 share/man/man1/vkvit-eval.1 \
         share/man/man1/vkvit-info.1 share/man/man1/vkvit-inspect.1 share/man/man1/vkvit-run.1 \
         share/man/man1/vkvit-bench.1 share/man/man1/vkvit-bench-gemm.1 share/bash-completion/completions/vkvit \
         share/zsh/site-functions/_vkvit; do
    [ -e "$prefix/$f" ] || fail "missing installed file $prefix/$f"
done
for f in bin/vkvit-convert bin/vkvit-bulk-classify; do [ -x "$prefix/$f" ] || fail "$prefix/$f is not executable"; done
version=$("$prefix/bin/vkvit" --version)
echo "$version" | grep -Eq '^vkvit [0-9]+\.[0-9]+\.[0-9]+ \([A-Za-z0-9._+-]+\)$' || fail "vkvit --version printed '$version'"
grep -qx "Version: $(echo "$version" | cut -d' ' -f2)" "$pc" || fail "vkvit.pc's Version is not that of '$version'"
if command -v groff > /dev/null; then
    for page in "$prefix"/share/man/man1/vkvit*.1; do
        warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page"
        [ -z "$warnings" ] || fail "groff warns on $page: $warnings"
    done
fi
# The bash completion completes a command, an option, an option's value and the nested `bench gemm`.
bash -c 'source "$1"
    t() { local want=$1; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _vkvit 2>/dev/null
          [[ " ${COMPREPLY[*]} " == *" $want "* ]] || { echo "completing \"$*\" gave \"${COMPREPLY[*]}\", not $want"; exit 1; }; }
    t classify vkvit cl; t --model vkvit classify --mo; t fp16-math vkvit run --precision fp16-
    t gemm vkvit bench ge; t --versus vkvit bench gemm --ver' _ "$prefix/share/bash-completion/completions/vkvit" \
    || fail "the bash completion"
if command -v zsh > /dev/null; then zsh -n "$prefix/share/zsh/site-functions/_vkvit" || fail "zsh -n _vkvit"; fi
# The bulk tool finds its installed binding and library (--help loads neither, so ask the binding itself).
env -u VKVIT_LIBRARY -u PYTHONPATH "$prefix/bin/vkvit-bulk-classify" --help > /dev/null || fail "vkvit-bulk-classify --help"
py=${PYTHON:-python3}
if "$py" -c 'import numpy' 2> /dev/null; then
    PYTHONPATH="$prefix/share/vkvit/python" VKVIT_LIBRARY="$libdir/libvkvit.so" "$py" -c 'import vkvit; vkvit.devices()' \
        || fail "the installed binding"
else
    say "not checked: the installed binding ($py has no numpy; PYTHON=/usr/bin/python3 picks another python)"
fi

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
