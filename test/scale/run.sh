#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# 256 endpoints through a port failure (issue 31), in both standby
# configurations. One client process opens 256 endpoints of varuna_demo to
# one server at once (as contrib/scale-bench does: a put, a fetch-and-add and
# an active message a round, round-robin, 512 rounds in flight), the client
# on softib0:1; the client's port goes down 30 % into the run and stays down.
# The server on softib0:2 with the standby on another device (softib1:1 and
# softib1:2), on softib1:1 with the standby on the other port of the same
# device (softib0:2 and softib1:2): every standby path avoids softib0:1. Both
# sides must say OK (every fetch-add executed once, every active message once
# and in order, every put right), every one of the 256 endpoints must have
# failed over, and the job must not hang (a start-up with 256 endpoints at
# once hung in UCX's UD before patch 0011: TIMEOUT).
#
# Usage: test/scale/run.sh   (make check runs it: test/check/scale-256.sh)
# Environment: SCALE_EPS (default 256), SCALE_ROUNDS (default 40 a
# endpoint), SCALE_TIMEOUT (seconds a run, default 120); logs in
# build/logs/scale-256.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
prefix=$RC_VARUNA_PREFIX
eps=${SCALE_EPS:-256}
rounds=${SCALE_ROUNDS:-$((40 * eps))}
limit=${SCALE_TIMEOUT:-120}
logs=$RC_VARUNA_LOGS/scale-256
export PATH=$prefix/bin:$PATH
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rc_varuna_softib_registry scale-256

. "$RC_VARUNA_ROOT/contrib/scale-lib.sh"

command -v varuna_demo >/dev/null && command -v softib >/dev/null ||
    rc_varuna_skip "varuna_demo or softib missing under $prefix: build first"
rm -rf "$logs"
mkdir -p "$logs"

# one run: scale_run STANDBY SERVER_PORT; 0 if right
scale_run()
{
    local standby=$1 sdev=$2 port=$((20000 + RANDOM % 20000)) server client
    local slog=$logs/$standby-server.log clog=$logs/$standby-client.log
    local report=$logs/$standby-client.json failovers eps_failed problems

    rm -f "$SOFTIB_REGISTRY"
    rm -f "${slog%.log}.verdict" "${clog%.log}.verdict"
    scale_server "$sdev" "$port" "$slog" "$limit" \
        UCX_TLS=rc_varuna,ud_verbs:aux UCX_RC_VARUNA_STANDBY="$standby" \
        VARUNA_VERDICT_FILE="${slog%.log}.verdict"
    server=$scale_pid
    UCX_TLS=rc_varuna,ud_verbs:aux UCX_NET_DEVICES=softib0:1 \
        UCX_RC_VARUNA_STANDBY=$standby UCX_RC_VARUNA_REPORT=$report \
        VARUNA_DEMO_EPS=$eps VARUNA_DEMO_WINDOW=$((2 * eps)) \
        VARUNA_VERDICT_FILE=${clog%.log}.verdict \
        timeout --kill-after=10 "$limit" softib run -- \
        varuna_demo client 127.0.0.1 "$port" "$rounds" >"$clog" 2>&1 &
    client=$!
    scale_down_at $client "$clog" $((rounds * 30 / 100)) softib0:1 >/dev/null
    wait $client
    local crc=$?
    wait $server
    local src=$?
    softib link up softib0:1 >/dev/null 2>&1

    failovers=$(grep -c '"event":"failover"' "$report" 2>/dev/null)
    eps_failed=$(sed -n -E 's/.*"event":"failover","pid":[0-9]+,"ep":"([^"]*)".*/\1/p' \
                 "$report" 2>/dev/null | sort -u | wc -l)
    if ((crc == 124 || crc == 137 || src == 124 || src == 137)); then
        echo "FAIL: STANDBY=$standby: TIMEOUT after $limit s ($(grep -o 'client: round [0-9]*' "$clog" | tail -n 1); logs: $logs)"
        return 1
    fi
    # each side's verdict, from the file it wrote it to
    problems=$(rc_varuna_verdicts "${clog%.log}.verdict" client
               rc_varuna_verdicts "${slog%.log}.verdict" server)
    if ((crc != 0 || src != 0)) || [[ -n $problems ]]; then
        echo "FAIL: STANDBY=$standby: client exit $crc, server exit $src (logs: $logs)"
        [[ -n $problems ]] && sed 's/^/   /' <<<"$problems"
        return 1
    fi
    if ((eps_failed != eps)); then
        echo "FAIL: STANDBY=$standby: $eps_failed of $eps endpoints failed over ($failovers failover reports)"
        return 1
    fi
    echo "ok: STANDBY=$standby: $eps endpoints, softib0:1 down 30 % in: $(cut -c1-120 "${clog%.log}.verdict")"
    echo "    $(cut -c1-120 "${slog%.log}.verdict"); $failovers failovers, every endpoint"
    return 0
}

status=0
scale_run auto softib0:2 || status=1
scale_run same softib1:1 || status=1
((status == 0)) && echo "PASS: $eps endpoints through a port failure, both standby configurations, exactly once"
exit $status
