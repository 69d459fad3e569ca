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
# (below). The 100 fail/restore cycles are left out: under valgrind with
# the default timeouts, re-protection stalled in some runs (see README,
# "Known problems"); run them with VALGRIND_FILTER.
#
# Usage: test/check/own-gtest-valgrind.sh [auto|same] [GTEST ARGS...]
# Environment: as own-gtest.sh; VALGRIND_FILTER replaces the default
# selection, e.g. VALGRIND_FILTER='rc_varuna/test_rc_varuna_failover.*'
# with RC_VARUNA_FI_STEP=4 for the matrix.
#

set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${RC_VARUNA_UCX_BUILD:-$root/build/ucx/build}

command -v valgrind >/dev/null || {
    echo "valgrind is not installed (contrib/debian-packages lists it)"
    exit 77
}

fo=rc_varuna/test_rc_varuna_failover
ep=rc_varuna/test_rc_varuna_error_paths
# done_lost_then_failover is left out: it needs the peer to see nothing
# of a lane whose traffic is dropped for a few milliseconds, and under
# valgrind the peer's own retries on that lane run out first (1 run in 3);
# ASan runs it (own-gtest-asan.sh)
export GTEST_FILTER=${VALGRIND_FILTER:-$fo.both_paths_down/*:$fo.fail_lane_hook/*:$fo.fadd/0:$fo.am_bcopy/0:$fo.mixed/0:$fo.counters_in_vfs/0:$ep.*/0:-$ep.done_lost_then_failover/*}
export RC_VARUNA_FI_STEP=${RC_VARUNA_FI_STEP:-3}
export GTEST_TIMEOUT=${GTEST_TIMEOUT:-1500}
export UCX_HANDLE_ERRORS=none
# valgrind runs the programs and softib 20 to 50 times slower: rc_varuna's
# 8 ms RC timeout and 250 ms watchdog would then see a healthy but slow
# peer as a dead path and fail over again, which the exact failover counts
# of the tests do not expect. Port failures are still detected by PORT_ERR.
export UCX_RC_VARUNA_TIMEOUT=${UCX_RC_VARUNA_TIMEOUT:-100ms}
export UCX_RC_VARUNA_WATCHDOG=${UCX_RC_VARUNA_WATCHDOG:-3s}
# valgrind's memcheck, the way UCX's own "make test_valgrind" runs it
export RC_VARUNA_GTEST_WRAPPER="valgrind --leak-check=full
    --show-leak-kinds=definite,indirect
    --errors-for-leak-kinds=definite,indirect --error-exitcode=3
    --num-callers=30 --suppressions=${RC_VARUNA_UCX_SRC:-$root/build/ucx/src}/contrib/valgrind.supp"
exec bash "$here/own-gtest.sh" "${1:-auto}" "${@:2}"
