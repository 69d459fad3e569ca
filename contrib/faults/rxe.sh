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
SC_CYCLE_SECS=6                 # a fail/heal cycle under TCG, generous
SC_WAKEUP_MS=-1                 # wakeup mode: sleep until an event
# a name: the kernel's default "(none)" is no host name to Open MPI
echo rxe-vm >/proc/sys/kernel/hostname

# The host's environment (run-vm writes it)
[[ -r $SC_OUT/guest.env ]] && . "$SC_OUT/guest.env"


# ---------------------------------------------------------------- wiring
RXE_A1=192.0.2.1 RXE_B1=192.0.2.2 RXE_A2=198.51.100.1 RXE_B2=198.51.100.2

rxe_routes()  # 1, 2 or all; a downed device's routes are flushed
{
    local l a b
    for l in 1 2; do
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

rxe_wire()
{
    local l d i g0 g1 g2 g3

    ip link set lo up
    sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
               net.ipv6.conf.default.disable_ipv6=1
    for d in all default; do
        sysctl -qw net.ipv4.conf.$d.rp_filter=0 \
                   net.ipv4.conf.$d.accept_local=1
    done
    for l in 1 2; do
        a=RXE_A$l b=RXE_B$l
        ip link add vethA$l address 02:00:00:00:0$l:0a type veth \
            peer name vethB$l address 02:00:00:00:0$l:0b
        # /24: UCX_IB_ROCE_LOCAL_SUBNET=y derives each port's subnet from it
        ip addr add ${!a}/24 dev vethA$l
        ip addr add ${!b}/24 dev vethB$l
        ip link set vethA$l up
        ip link set vethB$l up
    done
    ip rule add pref 10 iif lo lookup 100
    ip rule add pref 100 lookup local
    ip rule del pref 0
    rxe_routes all

    rdma link add rxe0 type rxe netdev vethA1 &&
    rdma link add rxe1 type rxe netdev vethA2 &&
    rdma link add rxe2 type rxe netdev vethB1 &&
    rdma link add rxe3 type rxe netdev vethB2 ||
        { sc_bad "rdma link add failed"; return 1; }

    for i in $(seq 50); do
        g0=$(rxe_gid_index rxe0 $RXE_A1) g1=$(rxe_gid_index rxe1 $RXE_A2)
        g2=$(rxe_gid_index rxe2 $RXE_B1) g3=$(rxe_gid_index rxe3 $RXE_B2)
        [[ -n $g0 && -n $g1 && -n $g2 && -n $g3 ]] && break
        fsleep 0.2
    done
    if [[ -z $g0 || "$g0$g0$g0$g0" != "$g0$g1$g2$g3" ]]; then
        sc_bad "IPv4 GID indices missing or different: $g0 $g1 $g2 $g3"
        return 1
    fi
    RXE_GID_INDEX=$g0
    for d in rxe0 rxe1 rxe2 rxe3; do
        rxe_wait_active $d || { sc_bad "$d is not ACTIVE"; return 1; }
    done
    sc_ok "two links, rxe0..rxe3 ACTIVE, RoCEv2 IPv4 GID index $RXE_GID_INDEX"
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

# Bytes each veth sent so far: "vethA1=N vethB1=N vethA2=N vethB2=N"
rxe_tx_bytes()
{
    local d v o=
    for d in vethA1 vethB1 vethA2 vethB2; do
        read -r v </sys/class/net/$d/statistics/tx_bytes
        o+="$d=$v "
    done
    echo "$o"
}


# Packets sent so far on both links, all four veths (each packet once: a
# veth's tx is its peer's rx)
backend_packets()
{
    local d v n=0
    for d in vethA1 vethB1 vethA2 vethB2; do
        read -r v </sys/class/net/$d/statistics/tx_packets
        n=$((n + v))
    done
    echo $n
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
