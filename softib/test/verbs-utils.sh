#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Debian's unmodified verbs programs on softib (issue 3, acceptance): the
# devices and their ACTIVE ports in ibv_devinfo; ibv_rc_pingpong and
# ibv_ud_pingpong between two processes, port 1 to 1, port 1 to 2 and
# device to device, checking the data (-c); ib_write_bw, ib_read_bw,
# ib_atomic_bw and ib_send_lat to completion. Each program runs under a
# timeout; exit status, the addresses it used and its report are checked.
# Run by "make check" in softib/, or by hand after ". build/env.sh":
#   softib/test/verbs-utils.sh
#

set -uo pipefail

# shellcheck source=pair.sh
. "$(dirname "$0")/pair.sh"

# Every wait below is bounded by this, per process
secs=${VERBS_UTILS_TIMEOUT:-60}

for prog in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ib_write_bw \
            ib_read_bw ib_atomic_bw ib_send_lat; do
    command -v "$prog" >/dev/null || {
        echo "FAIL: $prog not found (contrib/debian-packages lists" \
             "ibverbs-utils and perftest)"
        exit 1
    }
done

sib_setup verbs-utils

devinfo()
{
    local log=$sib_logs/devinfo n

    if ! timeout -k 5 "$secs" "$SOFTIB" run -- ibv_devinfo >"$log" 2>&1; then
        sib_fail "ibv_devinfo exits with 0"
        sib_show "$log"
        return
    fi
    if grep -qx 'hca_id:.softib0' "$log" && grep -qx 'hca_id:.softib1' "$log"
    then
        sib_pass "ibv_devinfo lists softib0 and softib1"
    else
        sib_fail "ibv_devinfo lists softib0 and softib1"
        sib_show "$log"
    fi
    n=$(grep -cE 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$log")
    if ((n == 4)) && grep -qE 'link_layer:[[:space:]]+InfiniBand' "$log"; then
        sib_pass "ibv_devinfo: 4 InfiniBand ports, all PORT_ACTIVE"
    else
        sib_fail "ibv_devinfo: 4 InfiniBand ports, all PORT_ACTIVE ($n)"
        sib_show "$log"
    fi
}

# pingpong KIND SERVER_DEV:PORT CLIENT_DEV:PORT [OPTIONS...]
# The client's "local address" must be its own port's LID and its "remote
# address" the server's: the programs really used the ports asked for.
pingpong()
{
    local kind=$1 sdp=$2 cdp=$3 port name slid clid
    local what="ibv_${kind}_pingpong $sdp <- $cdp${4:+ ${*:4}}"

    shift 3
    port=$(sib_free_port)
    name=$kind-${sdp/:/.}-${cdp/:/.}
    slid=$(printf '0x%04x' "$(sib_lid "$sdp")")
    clid=$(printf '0x%04x' "$(sib_lid "$cdp")")

    if ! sib_pair "$name" "$secs" "$port" \
            "ibv_${kind}_pingpong" -d "${sdp%:*}" -i "${sdp#*:}" -p "$port" \
            -c -n 500 "$@" :: \
            "ibv_${kind}_pingpong" -d "${cdp%:*}" -i "${cdp#*:}" -p "$port" \
            -c -n 500 "$@" 127.0.0.1; then
        sib_fail "$what"
        return
    fi
    if grep -q "^500 iters in" "$sib_logs/$name.client" &&
       grep -q "^500 iters in" "$sib_logs/$name.server" &&
       grep -qi "local address: *LID $clid" "$sib_logs/$name.client" &&
       grep -qi "remote address: *LID $slid" "$sib_logs/$name.client"; then
        sib_pass "$what"
    else
        sib_fail "$what: report or LIDs ($clid -> $slid) wrong"
        sib_show "$sib_logs/$name.server" "$sib_logs/$name.client"
    fi
}

# perftest PROG SERVER_DEV:PORT CLIENT_DEV:PORT BYTES ITERS [OPTIONS...]
# Both sides must finish and the client print its result row.
perftest()
{
    local prog=$1 sdp=$2 cdp=$3 bytes=$4 iters=$5 port name
    local what="$prog $sdp <- $cdp${6:+ ${*:6}}"

    shift 5
    port=$(sib_free_port)
    name=$prog-${sdp/:/.}-${cdp/:/.}
    if ! sib_pair "$name" "$secs" "$port" \
            "$prog" -d "${sdp%:*}" -i "${sdp#*:}" -p "$port" -F \
            -s "$bytes" -n "$iters" "$@" :: \
            "$prog" -d "${cdp%:*}" -i "${cdp#*:}" -p "$port" -F \
            -s "$bytes" -n "$iters" "$@" 127.0.0.1; then
        sib_fail "$what"
        return
    fi
    if grep -qE "^ *$bytes +$iters +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+" \
            "$sib_logs/$name.client"; then
        sib_pass "$what: $(grep -E "^ *$bytes +$iters " \
                           "$sib_logs/$name.client" | tr -s ' \t' ' ')"
    else
        sib_fail "$what: no result row"
        sib_show "$sib_logs/$name.client"
    fi
}

start=$SECONDS

devinfo

# -e sleeps on a completion channel; -N posts through ibv_wr_* (qp_ex);
# 9000 bytes with a 4096 MTU are three packets a message.
pingpong rc softib0:1 softib0:1
pingpong rc softib0:1 softib0:2 -e
pingpong rc softib0:1 softib1:1 -N -m 4096 -s 9000
pingpong ud softib0:1 softib0:1
pingpong ud softib0:1 softib0:2 -e
pingpong ud softib0:1 softib1:2

perftest ib_write_bw  softib0:1 softib1:1 65536 500
perftest ib_read_bw   softib0:2 softib1:2 65536 500
perftest ib_atomic_bw softib0:1 softib0:2 8 1000
perftest ib_atomic_bw softib0:1 softib1:1 8 1000 -A CMP_AND_SWAP
perftest ib_send_lat  softib0:1 softib1:1 64 1000

echo "# $sib_checks checks, $sib_failed failed, $((SECONDS - start)) s"
((sib_failed == 0))
