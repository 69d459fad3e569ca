#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: the endpoint lives on after a failover (issue 9), with UCP's
# timers shortened (keepalive every 300 ms, UD timeout 1 s). The link stays
# down; the client idles 4 s, progressing (more than 3 times the UD timeout
# and 13 keepalive rounds), then goes on with fresh traffic, checked as
# always: no endpoint error, everything exactly once. Then the same with
# the server killed instead: every endpoint of the client must report the
# dead peer, once, within 5 s. Both standby configurations.
#

set -uo pipefail
run=$(dirname "${BASH_SOURCE[0]}")/../bidir/run.sh
status=0

export UCX_KEEPALIVE_INTERVAL=300ms UCX_UD_TIMEOUT=1s

for standby in auto same; do
    bash "$run" -r 1 -c 1 -p -k -w 4 -s $standby -t 60 \
        -n survive-$standby || status=1
    bash "$run" -r 1 -c 1 -p -k -x 5 -s $standby -t 60 \
        -n peer-killed-$standby || status=1
done

echo "after-failover: exit $status"
exit $status
