#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the whole test suite on the default Vulkan device (lavapipe on a machine without a GPU), with the
# validation layer and synchronization validation on. Installs the test dependencies and builds first.
#
# Environment: BUILD_DIR (default build), CMAKE_ARGS, CTEST_ARGS (e.g. "-R gemm"), CTEST_JOBS (default: the number
# of cores; much of the suite is one thread at a time: llvmpipe compiling a pipeline, the float64 reference loops).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --test-deps
BUILD_DIR=${BUILD_DIR:-build}
export VKVIT_VALIDATION=1
# shellcheck disable=SC2086
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"${CTEST_JOBS:-$(nproc)}" ${CTEST_ARGS:-}
