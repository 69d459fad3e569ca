#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# An idle program sleeps after a failover (guarantee G7, issue 28). The
# demo's first scenario in UCP's wakeup mode: the client's primary link goes
# down mid-run and stays down; once its rounds are done the client waits for
# events with nothing to do (VARUNA_DEMO_IDLE seconds, polling the worker's
# event fd with a 100 ms timeout, as a program that also has other things to
# look at) and says how much CPU its process spent meanwhile. Every endpoint
# waits for re-protection all that time (the port is down): that must not
# keep the worker from sleeping. At most 1 % of a core (what it was and is:
# NEWS.md).
#
# Usage: test/idle/run.sh   (make check runs it:
# test/check/idle-after-failover.sh)
# Environment: IDLE_SECS (default 10), IDLE_MAX_CPU (percent, default 1)
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
secs=${IDLE_SECS:-10}
max=${IDLE_MAX_CPU:-1}
log=$RC_VARUNA_LOGS/demo/varuna-client.log

VARUNA_DEMO_WAKEUP=100 VARUNA_DEMO_IDLE=$secs \
    bash "$RC_VARUNA_ROOT/contrib/demo" --loop varuna 1 20000
status=$?
line=$(grep -h '^client: idle' "$log" 2>/dev/null)
if [[ -z $line ]]; then
    echo "FAIL: the client did not report its idle time (log: $log)"
    exit 1
fi
echo "$line"
cpu=$(sed -n 's/.*CPU \([0-9.]*\) %.*/\1/p' <<<"$line")
if ! awk -v c="$cpu" -v m="$max" 'BEGIN { exit !(c <= m) }'; then
    echo "FAIL: $cpu % of a core while idle after the failover (at most $max %)"
    exit 1
fi
((status == 0)) || { echo "FAIL: the run itself was wrong"; exit 1; }
echo "PASS: idle after a failover with its port down: $cpu % of a core"
