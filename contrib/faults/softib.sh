#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The softib backend of contrib/faults (the fault interface: lib.sh): our
# own device, on the host, shaped like the rxe wiring so that the same
# scenarios mean the same thing on both: four single-port devices, softib0
# and softib1 for "host A", softib2 and softib3 for "host B", link 1 joining
# softib0 and softib2, link 2 softib1 and softib3, in a registry (a fabric)
# of this run's own. The script runs under "softib run" (contrib/faults/run
# starts it so), so every program it starts uses softib.
#
# How the faults map (contrib/rxe-vm/README.md lists the differences):
#   link_down L      both ends' ports down (a veth going down takes the
#                    carrier from both ends; softib has no cable between
#                    two ports, so it downs both)
#   link_blackhole L S  a drop rule on S's device, every packet it sends
#   link_heal L      both ports up, the rules of link L removed
# softib's fabric joins every port, while on rxe each port reaches only its
# own link's /24: nothing here connects across links, as rc_varuna pairs
# primary with primary and standby with standby.
#

: "${SOFTIB_REGISTRY:=/dev/shm/softib-faults.$$}"
export SOFTIB_REGISTRY
export SOFTIB_DEVICES=softib0:1,softib1:1,softib2:1,softib3:1

# softib acknowledges only while the receiving process runs its engine (a
# real HCA acknowledges in hardware): with rc_varuna's 8 ms x 5 a peer off
# the CPU for ~50 ms on a busy 2-core machine makes a healthy lane give up
# (seen in make check with a VM running beside it). 32 ms, as
# test/check/after-failover.sh; link down is still seen at once
# (PORT_ERR), one-way loss after ~0.2 s instead of ~50 ms.
export UCX_RC_VARUNA_TIMEOUT=${UCX_RC_VARUNA_TIMEOUT:-32ms}

SC_OUT=${SC_OUT:-$RC_VARUNA_LOGS/faults-softib}
SC_A1=softib0 SC_A2=softib1 SC_B1=softib2 SC_B2=softib3
SC_A3=softib4 SC_A4=softib5 SC_B3=softib6 SC_B4=softib7
SC_CYCLE_SECS=1                 # a fail/heal cycle (~0.6 s)
# wakeup mode: a sleeping process runs no softib engine (a real NIC works
# on while its host sleeps), so an endless sleep would never end; 10 ms
SC_WAKEUP_MS=10
SC_MANY_PACE_US=0               # cycles with many endpoints: unpaced
SC_PINGPONG_ARGS=
declare -A sc_softib_rules=()     # link -> ids of its drop rules

backend_setup()
{
    rm -f "$SOFTIB_REGISTRY"
    softib reset >/dev/null || { sc_bad "softib: no registry"; return 1; }
    # UCX looks for /dev/infiniband/<device> (softib2 and softib3 are new)
    softib devnodes >/dev/null || { sc_bad "softib devnodes failed"; return 1; }
    sc_ok "softib: four single-port devices, two links" \
          "(registry $SOFTIB_REGISTRY)"
}

# links 3 and 4: four more single-port devices (a new registry: between
# scenarios nothing runs on the old one)
backend_more_links()
{
    [[ $SOFTIB_DEVICES == *softib7* ]] && return 0
    export SOFTIB_DEVICES=$SOFTIB_DEVICES,softib4:1,softib5:1,softib6:1,softib7:1
    rm -f "$SOFTIB_REGISTRY"
    softib reset >/dev/null && softib devnodes >/dev/null ||
        { sc_bad "softib: eight devices failed"; return 1; }
    sc_ok "softib: eight single-port devices, four links"
}

backend_link_active() { return 0; }   # softib: up at once

# Packets sent so far by every device of the registry (softib's counters)
backend_packets()
{
    softib counters | awk '$1 == "tx_packets" { n += $2 } END { print n + 0 }'
}

backend_counters() { softib counters | sed 's/^/softib /'; }

backend_finish() { rm -f "$SOFTIB_REGISTRY"; }

link_down()
{
    local a=SC_A$1 b=SC_B$1 first=${2:-A}
    if [[ $first == A ]]; then
        softib link down ${!a}:1 && softib link down ${!b}:1
    else
        softib link down ${!b}:1 && softib link down ${!a}:1
    fi >/dev/null
}

link_blackhole()
{
    local d=SC_${2:-A}$1 id
    id=$(softib drop ${!d}:1 --dir tx --class all) || return 1
    sc_softib_rules[$1]+="$id "
}

link_heal()
{
    local a=SC_A$1 b=SC_B$1 id
    for id in ${sc_softib_rules[$1]:-}; do
        softib undo "$id" >/dev/null
    done
    sc_softib_rules[$1]=
    softib link up ${!a}:1 >/dev/null
    softib link up ${!b}:1 >/dev/null
}
