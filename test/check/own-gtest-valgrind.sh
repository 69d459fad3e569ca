#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Our failover gtest cases under valgrind's memcheck: no invalid access, no
# leak (definite or indirect) through failovers of three matrix types, the
# error paths (a verb failing), the counters read through the VFS and
# both paths dying (the peer-failure path). A subset: valgrind slows the
# cases 20 to 50 times, so the RC timeout and the watchdog are longer
# (below). The 100 fail/restore cycles are left out for time (about 65 s
# under valgrind); run them with VALGRIND_FILTER.
#
# Usage: test/check/own-gtest-valgrind.sh [auto|same] [GTEST ARGS...]
# Environment: as test/gtest/run-own.sh; VALGRIND_FILTER replaces the default
# selection, e.g. VALGRIND_FILTER='rc_varuna/test_rc_varuna_failover.*'
# with RC_VARUNA_FI_STEP=4 for the matrix.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"

command -v valgrind >/dev/null ||
    rc_varuna_skip "valgrind is not installed (contrib/debian-packages" \
                   "lists it)"

fo=rc_varuna/test_rc_varuna_failover
ep=rc_varuna/test_rc_varuna_error_paths
export GTEST_FILTER=${VALGRIND_FILTER:-$fo.both_paths_down/*:$fo.fail_lane_hook/*:$fo.fadd/0:$fo.am_bcopy/0:$fo.mixed/0:$fo.counters_in_vfs/0:$ep.*/0}
export RC_VARUNA_FI_STEP=${RC_VARUNA_FI_STEP:-3}
export GTEST_TIMEOUT=${GTEST_TIMEOUT:-1500}
export UCX_HANDLE_ERRORS=none
# valgrind runs the programs and softib 20 to 50 times slower: rc_varuna's
# 8 ms RC timeout and 250 ms watchdog would then see a healthy but slow
# peer as a dead path and fail over again, which the exact failover counts
# of the tests do not expect. Port failures are still detected by PORT_ERR.
export UCX_RC_VARUNA_TIMEOUT=${UCX_RC_VARUNA_TIMEOUT:-100ms}
export UCX_RC_VARUNA_WATCHDOG=${UCX_RC_VARUNA_WATCHDOG:-3s}
# the cases that set their own RC timeout and watchdog (the quiet lane
# ones) scale them, and what they wait, by this
export RC_VARUNA_TIME_SCALE=${RC_VARUNA_TIME_SCALE:-20}
# valgrind's memcheck, the way UCX's own "make test_valgrind" runs it.
# --fair-sched=try as there: valgrind runs one thread at a time, and with
# its default lock a thread that never blocks (the test's progress loop)
# kept UCX's async thread, which delivers the port events, from running for
# seconds; 6 of 40 runs of done_waits_then_failover missed a failover or a
# re-protection within the test's 20 s (one in the CI run of 1ba44fb)
export RC_VARUNA_GTEST_WRAPPER="valgrind --fair-sched=try --leak-check=full
    --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=3
    --num-callers=30 --suppressions=${RC_VARUNA_UCX_SRC:-$UCX_SRC}/contrib/valgrind.supp"
exec bash "$RC_VARUNA_ROOT/test/gtest/run-own.sh" "${1:-auto}" "${@:2}"
