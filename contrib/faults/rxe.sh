#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# The rxe backend of contrib/faults (the fault interface: lib.sh): Linux
# Soft-RoCE in the qemu guest of contrib/rxe-vm, where the scenario script
# runs as PID 1. The two-link wiring with four rxe devices, and the faults.
#
#   "host A"                                        "host B"
#   rxe0 - vethA1 192.0.2.1/24    <=== link 1 ===>  vethB1 192.0.2.2/24    - rxe2
#   rxe1 - vethA2 198.51.100.1/24 <=== link 2 ===>  vethB2 198.51.100.2/24 - rxe3
#   rxe4 - vethA3 203.0.113.1/24  <=== link 3 ===>  vethB3 203.0.113.2/24  - rxe6
#   rxe5 - vethA4 198.18.0.1/24   <=== link 4 ===>  vethB4 198.18.0.2/24   - rxe7
#
# Links 3 and 4 only for the scenarios that ask (backend_more_links): a
# second UCP lane with its own standby.
#
# All four devices live in one network namespace: rxe in kernel 6.1 works
# only in init_net (its UDP socket and route lookups are there). Both ends
# of a link are local addresses, so by default the kernel would send the
# RoCEv2 packets over lo, where no rxe device listens; the local routing
# table is moved behind an "iif lo -> table 100" rule holding one /32 route
# per direction, with accept_local, no rp_filter and static neighbours, so
# every packet really crosses its veth pair. IPv6 is off on the veths, so
# nothing else sends there. GID index 1 is each device's IPv4-mapped
# RoCEv2 GID (index 0, the IPv6 link-local one, is not routed here).
#

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

SC_OUT=/tmp/out                 # the host's RXE_VM_OUT, writable
SC_A1=rxe0 SC_A2=rxe1 SC_B1=rxe2 SC_B2=rxe3
SC_A3=rxe4 SC_A4=rxe5 SC_B3=rxe6 SC_B4=rxe7
RXE_LINKS="1 2"                 # wired so far
SC_CYCLE_SECS=6                 # a fail/heal cycle under TCG, generous
SC_WAKEUP_MS=-1                 # wakeup mode: sleep until an event
# a name: the kernel's default "(none)" is no host name to Open MPI
echo rxe-vm >/proc/sys/kernel/hostname

# The host's environment (run-vm writes it)
[[ -r $SC_OUT/guest.env ]] && . "$SC_OUT/guest.env"

# cycles with many endpoints: a round every 2 ms. Unpaced, 64 endpoints keep
# both emulated CPUs busy and the guest's rxe acknowledges late: the
# watchdog fails healthy lanes over (199 such failovers in 5 cycles) and
# endpoints end (contrib/rxe-vm/README.md)
SC_MANY_PACE_US=${RXE_MANY_PACE_US-2000}
# ... and an RC timeout of 32 ms (as softib's), which docs/rc_varuna.7.md
# advises on a loaded machine with a software device: with the default
# 8 ms, in 4 of 18 runs of cycles:10:64 a healthy active lane exhausted its
# retries while 64 re-protections reset and connected QPs in the guest
# ("lane rxe1:1 failed (retry_exceeded) with no standby (lane rxe0:1
# reconnecting)"), and the endpoint ended
SC_MANY_RC_TIMEOUT=${RXE_MANY_RC_TIMEOUT-32ms}
# (RXE_MANY_PACE_US and RXE_MANY_RC_TIMEOUT, from the host, change them)


# ---------------------------------------------------------------- wiring
RXE_A1=192.0.2.1 RXE_B1=192.0.2.2 RXE_A2=198.51.100.1 RXE_B2=198.51.100.2
RXE_A3=203.0.113.1 RXE_B3=203.0.113.2 RXE_A4=198.18.0.1 RXE_B4=198.18.0.2

rxe_routes()  # a link or all; a downed device's routes are flushed
{
    local l a b
    for l in $RXE_LINKS; do
        [[ ${1:-all} == all || $1 == $l ]] || continue
        a=RXE_A$l b=RXE_B$l
        ip route replace ${!b}/32 dev vethA$l src ${!a} table 100
        ip route replace ${!a}/32 dev vethB$l src ${!b} table 100
        ip neigh replace ${!b} lladdr 02:00:00:00:0$l:0b dev vethA$l \
            nud permanent
        ip neigh replace ${!a} lladdr 02:00:00:00:0$l:0a dev vethB$l \
            nud permanent
    done
}

rxe_port_state()
{
    local s
    read -r s </sys/class/infiniband/$1/ports/1/state
    echo "${s#*: }"
}

rxe_wait_active()
{
    local i
    for i in $(seq 100); do
        [[ $(rxe_port_state $1) == ACTIVE ]] && return 0
        fsleep 0.1
    done
    return 1
}

# The index of a device's RoCEv2 IPv4 GID: rxe_gid_index DEV IPV4
rxe_gid_index()
{
    local want f g IFS=.
    set -- "$1" $2
    printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
        "$2" "$3" "$4" "$5"
    for f in /sys/class/infiniband/$1/ports/1/gids/*; do
        read -r g <"$f" 2>/dev/null
        [[ $g == "$want" ]] && { echo "${f##*/}"; return; }
    done
}

# The veth pair of link L, addressed and up
rxe_veth()
{
    local l=$1 a=RXE_A$1 b=RXE_B$1

    ip link add vethA$l address 02:00:00:00:0$l:0a type veth \
        peer name vethB$l address 02:00:00:00:0$l:0b
    # /24: UCX_IB_ROCE_LOCAL_SUBNET=y derives each port's subnet from it
    ip addr add ${!a}/24 dev vethA$l
    ip addr add ${!b}/24 dev vethB$l
    ip link set vethA$l up
    ip link set vethB$l up
}

# rxe devices on the veths of links L..., ACTIVE with the same IPv4 GID
# index as the others: rxe_devices L...
rxe_devices()
{
    local l i d a b g want= got devs=()

    for l; do
        a=SC_A$l b=SC_B$l
        rdma link add ${!a} type rxe netdev vethA$l &&
        rdma link add ${!b} type rxe netdev vethB$l ||
            { sc_bad "rdma link add for link $l failed"; return 1; }
        devs+=(${!a}:RXE_A$l ${!b}:RXE_B$l)
    done
    for i in $(seq 50); do
        got=
        for d in "${devs[@]}"; do
            a=${d#*:}
            g=$(rxe_gid_index ${d%%:*} ${!a})
            got+="${g:-?} "
        done
        [[ $got != *'?'* ]] && break
        fsleep 0.2
    done
    for g in $got; do
        want=${RXE_GID_INDEX:-$g}
        if [[ $g != "$want" ]]; then
            sc_bad "IPv4 GID indices missing or different: $got"
            return 1
        fi
        RXE_GID_INDEX=$want
    done
    for d in "${devs[@]}"; do
        rxe_wait_active ${d%%:*} || { sc_bad "${d%%:*} is not ACTIVE"; return 1; }
    done
}

rxe_wire()
{
    local l d

    ip link set lo up
    sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
               net.ipv6.conf.default.disable_ipv6=1
    for d in all default; do
        sysctl -qw net.ipv4.conf.$d.rp_filter=0 \
                   net.ipv4.conf.$d.accept_local=1
    done
    for l in $RXE_LINKS; do
        rxe_veth $l
    done
    ip rule add pref 10 iif lo lookup 100
    ip rule add pref 100 lookup local
    ip rule del pref 0
    rxe_routes all
    rxe_devices $RXE_LINKS || return 1
    sc_ok "two links, rxe0..rxe3 ACTIVE, RoCEv2 IPv4 GID index $RXE_GID_INDEX"
}

backend_more_links()
{
    local l

    [[ $RXE_LINKS == "1 2" ]] || return 0
    for l in 3 4; do
        rxe_veth $l
    done
    RXE_LINKS="1 2 3 4"
    rxe_routes all
    rxe_devices 3 4 || return 1
    sc_ok "links 3 and 4, rxe4..rxe7 ACTIVE"
}


# ---------------------------------------------------------------- faults
# link_down L [A|B]: that side's veth down; carrier goes, so both ends'
#   ports report IBV_EVENT_PORT_ERR (~0.2 s)
# link_blackhole L [A|B]: 100 % loss on that side's egress; silent, no
#   event: only retry exhaustion (or the peer) notices
# link_heal L: everything back, routes included; ports ACTIVE in ~1 s
link_down() { ip link set veth${2:-A}$1 down; }
link_blackhole() { tc qdisc replace dev veth${2:-A}$1 root netem loss 100%; }
link_heal()
{
    tc qdisc del dev vethA$1 root 2>/dev/null
    tc qdisc del dev vethB$1 root 2>/dev/null
    ip link set vethA$1 up
    ip link set vethB$1 up
    rxe_routes $1
}

# Packets sent so far on every link, both veths of each (each packet once:
# a veth's tx is its peer's rx)
backend_packets()
{
    local l d v n=0
    for l in $RXE_LINKS; do
        for d in vethA$l vethB$l; do
            read -r v </sys/class/net/$d/statistics/tx_packets
            n=$((n + v))
        done
    done
    echo $n
}

# rxe's own counters of every device (retransmissions, RNR NAKs, sequence
# errors, retries exceeded)
backend_counters()
{
    local f d
    for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
        [[ -r $f ]] || continue
        d=${f#/sys/class/infiniband/}
        echo "${d%%/*} ${f##*/} $(<"$f")"
    done
}

# ---------------------------------------------------------------- backend
backend_setup()
{
    rxe_wire || return 1
    # UCX on this wiring (contrib/rxe-vm/README.md): the IPv4 GID, no DGID
    # check on UD (it would drop every packet), and each port reaches only
    # its own /24. rc_varuna's retry count (5) is below 7, which rxe treats
    # as infinite.
    export UCX_IB_GID_INDEX=$RXE_GID_INDEX
    export UCX_UD_ETH_DGID_CHECK=n
    export UCX_IB_ROCE_LOCAL_SUBNET=y
    SC_PINGPONG_ARGS="-g $RXE_GID_INDEX"
}

backend_link_active()
{
    local a=SC_A$1 b=SC_B$1
    rxe_wait_active ${!a} && rxe_wait_active ${!b}
}

# the guest ends here: power off (run-vm reads the result line)
backend_finish()
{
    sync
    echo o >/proc/sysrq-trigger
    sleep 30
}
