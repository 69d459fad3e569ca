# SPDX-License-Identifier: BSD-3-Clause
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Shell helpers for tests that run unmodified programs on softib: a private
# registry, free TCP ports, and a server and a client process run as a pair,
# each under a timeout. Sourced (bash) by softib's own scripts,
# softib/test/verbs-utils.sh and softib/test/bench.sh, and by the two of
# rc_varuna that run ucx_perftest in pairs, test/perftest/run.sh and
# contrib/bench. It needs nothing outside softib.
#
#   SOFTIB         the softib command (default: softib on PATH)
#   SIB_KEEP_LOGS  keep the log directory (its path is printed)
#
# shellcheck shell=bash

SOFTIB=${SOFTIB:-softib}
sib_checks=0
sib_failed=0

# A registry of our own, so that rules and link changes made by other tests
# running at the same time never reach us, and a directory for the logs.
sib_setup()
{
    local name=$1

    command -v "$SOFTIB" >/dev/null ||
        { echo "FAIL: $SOFTIB not found (. build/env.sh, or set SOFTIB)"; \
          exit 1; }
    sib_logs=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
    export SOFTIB_REGISTRY=/dev/shm/softib-$name.$$
    rm -f "$SOFTIB_REGISTRY"
    trap sib_cleanup EXIT
    "$SOFTIB" status >"$sib_logs/status" ||
        { echo "FAIL: softib status"; exit 1; }
}

sib_cleanup()
{
    local pid

    for pid in ${sib_pids:-}; do
        kill -- "$pid" 2>/dev/null || true
    done
    rm -f "$SOFTIB_REGISTRY"
    if [[ -n ${SIB_KEEP_LOGS:-} ]]; then
        echo "logs in $sib_logs"
    else
        rm -rf "$sib_logs"
    fi
}

sib_pass()
{
    sib_checks=$((sib_checks + 1))
    echo "ok $sib_checks - $*"
}

sib_fail()
{
    sib_checks=$((sib_checks + 1))
    sib_failed=$((sib_failed + 1))
    echo "not ok $sib_checks - $*"
}

# Print the end of a log, indented, for a failure report.
sib_show()
{
    local f

    for f in "$@"; do
        echo "  --- $(basename "$f"):"
        tail -n 15 "$f" | sed 's/^/  | /'
    done
}

# The LID of DEV:PORT, from softib status.
sib_lid()
{
    awk -v p="$1" '$1 == p { print $3 }' "$sib_logs/status"
}

# Is a TCP socket bound to this port (any state, IPv4 or IPv6)?
sib_port_used()
{
    local hex

    hex=$(printf ':%04X' "$1")
    awk -v h="$hex" 'NR > 1 && substr($2, length($2) - 4) == h { f = 1 }
                     END { exit !f }' /proc/net/tcp /proc/net/tcp6
}

# A TCP port that nothing uses now, from a range that depends on our pid so
# that concurrent runs rarely even try the same one.
sib_free_port()
{
    local port=$((20000 + ($$ * 13 + ${sib_port_seq:-0} * 7) % 20000))

    sib_port_seq=$((${sib_port_seq:-0} + 1))
    while sib_port_used "$port"; do
        port=$((port + 1))
    done
    echo "$port"
}

# Wait until something listens on the port, or the process is gone.
sib_wait_listen()
{
    local port=$1 pid=$2 tries=${3:-200} hex

    hex=$(printf ':%04X' "$port")
    while ((tries-- > 0)); do
        awk -v h="$hex" 'NR > 1 && $4 == "0A" &&
                         substr($2, length($2) - 4) == h { f = 1 }
                         END { exit !f }' /proc/net/tcp /proc/net/tcp6 &&
            return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# sib_pair NAME SECONDS PORT SERVER_CMD... :: CLIENT_CMD...
# Run the server on softib, wait until it listens on PORT, run the client.
# Each gets SECONDS. Logs: $sib_logs/NAME.server and NAME.client. Returns 0
# if both exited with 0; otherwise prints what happened.
sib_pair()
{
    local name=$1 secs=$2 port=$3 srv=() cli=() spid src=0 crc=0
    local slog=$sib_logs/$1.server clog=$sib_logs/$1.client

    shift 3
    while (($# > 0)) && [[ $1 != :: ]]; do
        srv+=("$1")
        shift
    done
    shift
    cli=("$@")

    timeout -k 5 "$secs" "$SOFTIB" run -- "${srv[@]}" >"$slog" 2>&1 &
    spid=$!
    sib_pids="${sib_pids:-} $spid"
    if ! sib_wait_listen "$port" "$spid"; then
        echo "  $name: the server did not listen on port $port"
        kill -- "$spid" 2>/dev/null || true
        wait "$spid" || true
        sib_show "$slog"
        return 1
    fi

    timeout -k 5 "$secs" "$SOFTIB" run -- "${cli[@]}" >"$clog" 2>&1 || crc=$?
    wait "$spid" || src=$?
    sib_pids=${sib_pids% "$spid"}
    if ((src != 0 || crc != 0)); then
        echo "  $name: server exit $src, client exit $crc (124: timeout)"
        sib_show "$slog" "$clog"
        return 1
    fi
    return 0
}
