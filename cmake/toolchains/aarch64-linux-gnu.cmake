# SPDX-License-Identifier: Apache-2.0
# Cross-compiling vkvit for 64-bit ARM Linux with Debian's cross toolchain and multiarch -dev packages
# (tools/cross_aarch64.sh installs them and runs this):
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# Compilers: gcc-aarch64-linux-gnu (crossbuild-essential-arm64). Libraries come from the arm64 multiarch paths
# (/usr/lib/aarch64-linux-gnu: libcjson-dev:arm64); headers from /usr/include (libvulkan-dev:arm64, libstb-dev:arm64,
# libvulkan-volk-dev, which ships volk.c as source). Programs run on the build machine: glslangValidator compiles the
# shaders to SPIR-V, which is the same bytes for every architecture.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_AR aarch64-linux-gnu-ar CACHE FILEPATH "")
set(CMAKE_RANLIB aarch64-linux-gnu-ranlib CACHE FILEPATH "")
set(CMAKE_STRIP aarch64-linux-gnu-strip CACHE FILEPATH "")

# Debian multiarch has no separate sysroot: search the host's /usr, but only its aarch64 library directory for
# libraries, and run build tools (glslangValidator) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Tests and examples cannot run here; a CI that has qemu-user can set this to run them.
set(CMAKE_CROSSCOMPILING_EMULATOR "" CACHE STRING "e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu")
