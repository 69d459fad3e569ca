#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Our gtest cases (every test_rc_varuna* case: steady state, classification,
# the failover matrix, the randomized trials) in UCX's gtest binary, on
# softib, for one standby configuration. The binary runs under "softib run"
# in a registry of its own and a timeout.
#
# Usage: test/gtest/run-own.sh auto|same [GTEST ARGS...]
#          auto  standby on another device (UCX_RC_VARUNA_STANDBY=auto)
#          same  standby on the other port of the same device
# Environment: RC_VARUNA_PREFIX, RC_VARUNA_UCX_BUILD (". build/env.sh" or
# make check set them; default build/ next to this repository),
# GTEST_FILTER (default "*test_rc_varuna*"), GTEST_TIMEOUT (default 1500 s),
# RC_VARUNA_ALLOWED_SKIPS (a regex of the cases allowed to skip; a run with
# no test or another skip fails, see test/gtest/gtest-verdict.sh),
# RC_VARUNA_TRIALS / RC_VARUNA_SEED (the randomized trials, see docs/testing.md),
# RC_VARUNA_GTEST_WRAPPER (a command the binary runs under, e.g. valgrind:
# see test/check/own-gtest-valgrind.sh), RC_VARUNA_GTEST_BINARY (the binary
# in the build tree's test/gtest, default gtest; test/check/own-gtest-asan.sh
# runs gtest-own).
#
# make check runs it from the entries test/check/own-gtest-*.sh.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$RC_VARUNA_ROOT/test/gtest/lib.sh"
standby=${1:?usage: $0 auto|same}
shift
case $standby in
auto|same) ;;
*) echo "usage: $0 auto|same" >&2; exit 2 ;;
esac

gtest_softib_setup "${RC_VARUNA_GTEST_BINARY:-gtest}" own-gtest-$standby
export UCX_RC_VARUNA_STANDBY=$standby
# the cases find softib's control library there, and fail without it
export RC_VARUNA_PREFIX
export RC_VARUNA_SOFTIB_REQUIRED=1

filter=${GTEST_FILTER:-*test_rc_varuna*}
echo "own-gtest: STANDBY=$standby gtest --gtest_filter=$filter $*"
out=$(mktemp /tmp/own-gtest.XXXXXX)
rc_varuna_at_exit 'rm -f "$out"'
start=$SECONDS
# shellcheck disable=SC2086 # the wrapper is a command line
gtest_softib_run "${GTEST_TIMEOUT:-1500}" ${RC_VARUNA_GTEST_WRAPPER:-} \
    "$gtest_bin" --gtest_filter="$filter" "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
((status == 124)) && echo "own-gtest: TIMEOUT after ${GTEST_TIMEOUT:-1500} s"
# A run that tested nothing, or skipped what it may not, fails. Allowed to
# skip: the failover benchmark (it runs when asked, contrib/failover-bench),
# the spare lane's full cycle, its prompt rebuild (idle and busy) and its
# rebuild as the other lane dies in the variant without the spare (one
# lane: nothing to cycle through, nothing to rebuild), the failed rebuild
# under a dead carrier in every variant but spare_peer (the endpoint's
# failure would end the process without peer error handling) and, with
# both sides on one device, the standby's own receive queue test (there is
# no separate standby receive queue to grow)
allowed='rc_varuna/test_rc_varuna_random\.failover_bench/[0-9]+'
allowed+='|rcvar/test_rc_varuna_ucp_spare_lane\.(full_cycle|port_back_rebuilds_at_once'
allowed+='|port_back_rebuilds_on_a_busy_lane'
allowed+='|other_lane_dies_as_ports_come_back)/1'
allowed+='|rcvar/test_rc_varuna_ucp_spare_lane\.carrier_dies_and_the_rebuild_fails/[012]'
[[ $standby == same ]] &&
    allowed+='|rc_varuna/test_rc_varuna[a-z_]*\.standby_rx_grows_on_demand/[0-9]+'
bash "$RC_VARUNA_ROOT/test/gtest/gtest-verdict.sh" "$out" \
    "${RC_VARUNA_ALLOWED_SKIPS:-$allowed}" || ((status != 0)) || status=1
echo "own-gtest: STANDBY=$standby exit $status, $((SECONDS - start)) s"
exit "$status"
