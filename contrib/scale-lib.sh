#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# What contrib/scale-bench and test/scale/run.sh share: varuna_demo's
# server started under softib, and a link taken down once the client has
# come so far (the latter also test/packages/check.sh's). Sourced after
# contrib/common.sh; needs softib and varuna_demo on PATH.
#

# scale_server DEV PORT LOG LIMIT [VAR=VALUE ...]: varuna_demo's server on
# DEV, with that environment, under softib and a timeout of LIMIT seconds,
# in the background; back once it listens (at most 10 s), its pid in
# scale_pid
scale_server()
{
    local dev=$1 port=$2 log=$3 limit=$4

    shift 4
    env UCX_NET_DEVICES="$dev" "$@" \
        timeout --kill-after=10 "$limit" softib run -- \
        varuna_demo server "$port" >"$log" 2>&1 &
    scale_pid=$!
    for _ in $(seq 100); do
        grep -q listening "$log" && break
        sleep 0.1
    done
}

# scale_down_at PID LOG ROUND DEV...: take each DEV's link down as soon as
# the client PID has said (in LOG) that it reached ROUND; prints when
# (seconds since the epoch, just before), or nothing and returns 1 if the
# client ended first. SOFTIB: the softib command (default: softib on PATH)
scale_down_at()
{
    local pid=$1 log=$2 round=$3 line dev

    shift 3
    while kill -0 "$pid" 2>/dev/null; do
        line=$(grep -o 'client: round [0-9]*' "$log" 2>/dev/null |
               tail -n 1) || true
        if [[ -n $line && ${line##* } -ge $round ]]; then
            date +%s.%N
            for dev in "$@"; do
                "${SOFTIB:-softib}" link down "$dev" >/dev/null
            done
            return 0
        fi
        sleep 0.02
    done
    return 1
}
