#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Our gtest cases in the AddressSanitizer build of UCX and our module
# (contrib/ucx-build asan, build/ucx/build-asan): no invalid access, no use
# after free, no leak (LeakSanitizer at exit) through failovers of every
# matrix type, the error paths (a verb failing), re-protection cycles and
# both paths dying. ASan slows the cases about 2 to 3 times, far less than
# valgrind, so the whole suite runs with rc_varuna's own timeouts; valgrind
# (own-gtest-valgrind.sh) stays, for uninitialised reads, which ASan does
# not see.
#
# Usage: test/check/own-gtest-asan.sh [auto|same] [GTEST ARGS...]
# Environment: as test/gtest/run-own.sh (GTEST_FILTER selects cases).
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
build=${RC_VARUNA_UCX_ASAN_BUILD:-$UCX_DIR/build-asan}

[[ -x $build/test/gtest/gtest-own ]] ||
    rc_varuna_skip "$build/test/gtest/gtest-own is missing: run" \
                   "'contrib/ucx-build asan'"

export RC_VARUNA_UCX_BUILD=$build
# a gtest binary with our cases only (test/gtest/own-gtest.mk)
export RC_VARUNA_GTEST_BINARY=gtest-own
# UCX's memory hooks patch malloc and mmap, which ASan owns: UCX's own
# tests run with them off under sanitizers. halt_on_error: the first
# report fails the run; the leak check at exit does too.
export UCX_MEM_MALLOC_HOOKS=no
export UCX_MEM_EVENTS=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0:exitcode=3:detect_stack_use_after_return=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-print_suppressions=0}
# The plain runs (auto and same) take every fault position of the fault
# matrix and 100 random trials a case. Here, where everything runs 2 to 3
# times slower, every other position and 50 trials (still every operation
# and every fault kind) take 5 minutes instead of 8 of CI's time; set them
# to 1 and 100 for the whole matrix.
export RC_VARUNA_FI_STEP=${RC_VARUNA_FI_STEP:-2}
export RC_VARUNA_TRIALS=${RC_VARUNA_TRIALS:-50}
# The device's variants: on softib, softib1's (/2, /3) are softib0's (/0,
# /1) with the devices' names swapped, the same code on the same paths, so
# make check runs softib0's here (primary on port 1, then port 2): 2 of
# CI's minutes. GTEST_FILTER='*test_rc_varuna*' runs all four.
: "${GTEST_FILTER:=*test_rc_varuna*-rc_varuna/*/2:rc_varuna/*/3}"
export GTEST_FILTER
# softib's libibverbs comes in through LD_LIBRARY_PATH, not LD_PRELOAD, so
# the ASan runtime is first in the gtest binary's library list
exec bash "$RC_VARUNA_ROOT/test/gtest/run-own.sh" "${1:-auto}" "${@:2}"
