#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# ucx_perftest between two processes on softib: a server and a client
# (127.0.0.1), each under "softib run" and a timeout, for the UCT tests
# put_lat, put_bw, am_lat, am_bw, add_lat, fadd, cswap, get over one
# transport and the UCP tests tag_lat, tag_bw, ucp_put_bw over a UCX_TLS
# list. Iteration counts are
# small: this checks that every test runs to completion and reports, it is
# not a benchmark. Both processes must exit with 0 and the client must print
# its result row.
#
# Usage: test/perftest/run.sh [-x TL] [-u TLS] [-d DEV:PORT] [-n ITERS]
#          -x TL        UCT transport (default rc_verbs; "" skips UCT)
#          -u TLS       UCX_TLS of the UCP tests (default rc_v; "" skips UCP)
#          -d DEV:PORT  the UCT device (default softib0:1)
#          -n ITERS     iterations per test (default 1000)
#   e.g. test/perftest/run.sh -x rc_varuna -u rc_varuna,ud_verbs:aux
#
# Environment: RC_VARUNA_PREFIX (". build/env.sh" or make check sets it;
# default build/prefix next to this repository): its bin/ucx_perftest and
# bin/softib are used. PERFTEST_TIMEOUT: seconds per process (default 60).
# Exit status: 0 passed, 1 failed, 77 skipped (no /dev/infiniband nodes, so
# UCX cannot see the devices: run "softib devnodes" once as root).
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
prefix=$RC_VARUNA_PREFIX

uct_tl=rc_verbs
ucp_tls=rc_v
dev=softib0:1
iters=1000
while getopts "x:u:d:n:" opt; do
    case $opt in
    x) uct_tl=$OPTARG ;;
    u) ucp_tls=$OPTARG ;;
    d) dev=$OPTARG ;;
    n) iters=$OPTARG ;;
    *) rc_varuna_usage; exit 2 ;;
    esac
done
shift $((OPTIND - 1))

export SOFTIB=$prefix/bin/softib
perftest=$prefix/bin/ucx_perftest
secs=${PERFTEST_TIMEOUT:-60}
# shellcheck source=../../softib/test/pair.sh
. "$RC_VARUNA_ROOT/softib/test/pair.sh"

[[ -x $perftest ]] || { echo "FAIL: $perftest is missing"; exit 1; }
for d in softib0 softib1; do
    [[ -c /dev/infiniband/$d ]] ||
        rc_varuna_skip "/dev/infiniband/$d is missing, UCX would not see" \
                       "the device; run 'softib devnodes' once as root"
done

# Our UCX, whatever else is installed; UCX_ settings of the caller would
# change what is measured
export LD_LIBRARY_PATH=$prefix/lib
unset UCX_TLS UCX_NET_DEVICES UCX_MODULE_DIR UCX_MODULES

sib_setup perftest

# run NAME TLS [PERFTEST ARGS...]: one test; TLS is UCX_TLS for both
# processes, or "" for a UCT test.
run()
{
    local name=$1 tls=$2 port row

    shift 2
    port=$(sib_free_port)
    if ! sib_pair "$name" "$secs" "$port" \
            env ${tls:+UCX_TLS=$tls} "$perftest" -p "$port" :: \
            env ${tls:+UCX_TLS=$tls} "$perftest" -p "$port" 127.0.0.1 \
            -n "$iters" -w $((iters / 10)) -f "$@"; then
        sib_fail "$name $*"
        return
    fi
    # the result row: iterations, then latency, bandwidth and rate figures
    row=$(grep -E "^ +$iters( +[0-9]+(\.[0-9]+)?){7}" "$sib_logs/$name.client")
    if [[ -n $row ]]; then
        sib_pass "$name $*: $(awk '{ printf "%s us, %s MB/s, %s msg/s",
                                       $2, $5, $7 }' <<<"$row")"
    else
        sib_fail "$name $*: no result row"
        sib_show "$sib_logs/$name.client"
    fi
}

start=$SECONDS

if [[ -n $uct_tl ]]; then
    uct=(-x "$uct_tl" -d "$dev")
    run put_lat "" -t put_lat "${uct[@]}" -s 8
    run put_bw  "" -t put_bw  "${uct[@]}" -D zcopy -s 65536
    run am_lat  "" -t am_lat  "${uct[@]}" -s 8
    run am_bw   "" -t am_bw   "${uct[@]}" -D bcopy -s 1024
    run add_lat "" -t add_lat "${uct[@]}"
    run fadd    "" -t fadd    "${uct[@]}"
    run cswap   "" -t cswap   "${uct[@]}"
    run get     "" -t get     "${uct[@]}" -D zcopy -s 65536
fi
if [[ -n $ucp_tls ]]; then
    run tag_lat    "$ucp_tls" -t tag_lat -s 8
    run tag_bw     "$ucp_tls" -t tag_bw -s 65536
    run ucp_put_bw "$ucp_tls" -t ucp_put_bw -s 65536
fi

echo "# ${uct_tl:-no UCT}, ${ucp_tls:-no UCP}: $sib_checks tests," \
     "$sib_failed failed, $((SECONDS - start)) s"
((sib_checks > 0 && sib_failed == 0))
