#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Sourced by contrib/faults/scenarios.sh (and any other fault script):
# verdict lines, fork-free helpers, and the backend, which is the fault
# interface the scenarios use. A backend (contrib/faults/BACKEND.sh) sets
#
#   SC_OUT                 where logs go
#   SC_A1 SC_A2 SC_B1 SC_B2
#                          "host A"'s and "host B"'s devices on link 1 and
#                          link 2 (A1 and B1 are joined by link 1, A2 and B2
#                          by link 2; each side's primary is on link 1, its
#                          standby on link 2)
#   SC_A3 SC_A4 SC_B3 SC_B4
#                          the same for links 3 and 4, which exist after
#                          backend_more_links (a second UCP lane: its
#                          primary on link 3, its standby on link 4)
#   SC_PINGPONG_ARGS       what ibv_rc_pingpong needs besides -d (a GID)
#   SC_CYCLE_SECS          about how long a fail/heal cycle takes there
#   SC_WAKEUP_MS           the poll timeout of the wakeup scenarios
#
# and defines
#
#   backend_setup          the devices and links, UCX_* for them; 0 if ready
#   backend_more_links     links 3 and 4 too; 0 if ready
#   backend_link_active L  0 when both ends of link L are usable again
#   backend_finish         the end of the run (after the result line)
#   backend_packets        packets sent so far on the links, all directions
#   backend_counters       the devices' own counters, one "device name value"
#                          a line (retransmissions, RNR NAKs, ...)
#   link_down L [A|B]      link L loses carrier; both ends see PORT_ERR
#   link_blackhole L [A|B] 100 % loss on that side's egress of link L,
#                          silent: no port event
#   link_heal L            every fault of link L undone
#
# Two backends: rxe (Linux Soft-RoCE in the qemu guest of contrib/rxe-vm,
# the real stack) and softib (our own device, on the host). The scenarios
# are the same code on both.
#

export HOME=${HOME:-/tmp} LC_ALL=C
set -u
# the build layout and rc_varuna_verdicts
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

SC_FAILS=0

sc_uptime() { local u _; read -r u _ </proc/uptime; echo "$u"; }
sc_mark() { echo "@@MARK t=$(sc_uptime) $*"; }
sc_ok() { echo "@@OK   $*"; }
sc_bad() { echo "@@FAIL $*"; SC_FAILS=$((SC_FAILS + 1)); }
sc_info() { echo "@@INFO $*"; }

# The run's verdict, from the EXIT trap: sc_finish STATUS (the status the
# script was leaving with). A run that stopped before the end of its list
# (an unbound variable, a bash error, a stray exit) never set SC_DONE: the
# scenarios it did not reach did not pass, and it fails.
sc_finish()
{
    local status=$1

    sc_mark "memory: $(free -m | awk '/^Mem:/ { print $3 "M of " $2 "M used" }')"
    if [[ ${SC_DONE:-0} != 1 ]]; then
        sc_bad "the run stopped early (exit $status) after scenario" \
               "'${SC_CURRENT:-none}': the rest of the list did not run"
    elif ((status != 0)); then
        sc_bad "the run ended with exit $status"
    fi
    if [[ $SC_FAILS -eq 0 ]]; then
        echo "@@RESULT PASS"
    else
        echo "@@RESULT FAIL ($SC_FAILS)"
    fi
    backend_finish
    [[ $SC_FAILS -eq 0 ]]
}

# Fork-free helpers: a fork+exec costs tens of ms under TCG over 9p
sc_tmp=$(mktemp -d /tmp/faults.XXXXXX)
mkfifo "$sc_tmp/.sleep"
exec {SC_SLEEP_FD}<>"$sc_tmp/.sleep"
fsleep() { read -r -t "$1" -u "$SC_SLEEP_FD" _; return 0; }
sc_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
sc_secs()
{
    local d=$1
    printf '%d.%03d' $((d / 1000000)) $((d % 1000000 / 1000))
}

sc_wait_listen()
{
    local i
    for i in $(seq 150); do
        ss -ltn | grep -q ":$1 " && return 0
        fsleep 0.1
    done
    return 1
}

# the backend: sc_backend NAME
sc_backend()
{
    local f
    f=$(dirname "${BASH_SOURCE[0]}")/$1.sh
    [[ -r $f ]] || { echo "no fault backend '$1' ($f)" >&2; exit 2; }
    . "$f"
    trap 'sc_rc=$?; sc_finish $sc_rc; sc_rc=$?; rm -rf "$sc_tmp"; exit $sc_rc' \
        EXIT
}
