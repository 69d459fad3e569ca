#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# An MPI application we did not write through a failure, the heal and the
# failback: Debian's LAMMPS (package lammps, /usr/bin/lmp, with the
# examples of lammps-examples; installed with apt-get when missing), 2
# ranks of Debian's Open MPI over our UCX (pml ucx, osc ucx, btl self only:
# nothing else can carry the job), UCX_TLS=rc_varuna,ud_verbs:aux on
# softib0:1, the standby on softib1:1. The input (test/apps/lammps-melt.in)
# is Debian's 3d Lennard-Jones melt example, then STEPS more steps of the
# same system.
#
# One run without a fault, then RUNS runs in which softib0:1 goes down
# DOWN s after the long run starts and comes back UP s later: failover,
# the grow of the standby's queue, the heal, re-protection, the failback
# (FAILBACK_HOLD, 5 s after the heal) and the standby made short again all
# happen while LAMMPS runs (each run lasts about 35 s on the 2-core VM at
# the default STEPS). A run is OK when LAMMPS exits 0, its results (its
# log without the timing lines) are identical to the run without a fault,
# each rank reports a failover and a failback with no fetch result lost,
# and each endpoint's last re-protection left its standby as short as
# before the grow (the reprotected event's send_credits equal to the grown
# event's old_send_credits).
#
# With -c, the carrier's death instead (issue 48): two lanes (softib0:1
# and softib0:2, standbys on softib1), the first one's ports go down DOWN s
# into the long run; once both ranks moved it to the second lane, they
# come back and at once the second lane's go down (back UP s later). A run
# is OK when the results are identical and each rank reports a lane
# failover onto the first lane connected again ("awaited_rebuild").
#
# The controller runs at real-time priority from the long run's start to
# the heal: with both ranks busy on 2 cores, its sleeps came back up to
# 12 s late otherwise (an outage of 16.8 s for 4).
#
# Usage: test/apps/lammps.sh [-c] [-r RUNS] [-n STEPS] [-d DOWN] [-u UP]
#   -c        the carrier's death, not a link's failure and heal
#   -r RUNS   runs with the fault (default 5)
#   -n STEPS  steps of the long run (default 30000)
#   -d DOWN   seconds into the long run when softib0:1 goes down (3)
#   -u UP     seconds it stays down (4)
# Logs: build/logs/apps/lammps/{clean,fault-N}/ (out.log, log.lammps,
# results.txt, report.json, events.txt). Exits 0 only if every run was OK.
# Root (apt-get, chrt).
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$RC_VARUNA_ROOT/test/mpi/lib.sh"

runs=5 steps=30000 down=3 up=4 carrier=0
while getopts "cr:n:d:u:" opt; do
    case $opt in
    c) carrier=1 ;;
    r) runs=$OPTARG ;;
    n) steps=$OPTARG ;;
    d) down=$OPTARG ;;
    u) up=$OPTARG ;;
    *) rc_varuna_usage ;;
    esac
done

rc_varuna_use_build
mpi_setup mpirun
if [[ ! -x /usr/bin/lmp || ! -d /usr/share/lammps/examples/melt ]]; then
    rc_varuna_progress "installing lammps lammps-examples (apt-get)"
    rc_varuna_as_root apt-get install -y -q lammps lammps-examples \
        >/dev/null || rc_varuna_die "cannot install lammps"
fi
logs=$RC_VARUNA_LOGS/apps/lammps
rm -rf "$logs"
mkdir -p "$logs"
input=$RC_VARUNA_ROOT/test/apps/lammps-melt.in
tmo=$((steps / 200 + 120))

# LAMMPS's log without the lines that time it
lammps_results()
{
    grep -v -E '^Loop time of |^Performance: |% CPU use with |^MPI task timing breakdown:|^Section +\||^-{20,}$|^(Pair|Neigh|Comm|Output|Modify|Other) +\||^Total wall time:|create_atoms CPU = ' \
        "$1"
}

# DOWN s into the long run of the job PID (run directory D), the
# controller at real-time priority; 1 if the job ended first
lammps_fault_start()
{
    local d=$1 pid=$2

    # the long run's thermo header is the second "Step" line
    while kill -0 "$pid" 2>/dev/null &&
          (($(grep -c '^ *Step' "$d/out.log") < 2)); do
        sleep 0.05
    done
    chrt -f -p 50 $$ >/dev/null ||
        rc_varuna_die "chrt: cannot run the controller at real-time priority"
    sleep "$down"
    kill -0 "$pid" 2>/dev/null || { chrt -o -p 0 $$; return 1; }
}

# The link's fault in run directory D while the job PID runs
lammps_fault()
{
    local d=$1 pid=$2

    lammps_fault_start "$d" "$pid" || return 1
    softib link down softib0:1 >>"$d/events.txt" 2>&1
    echo "softib0:1 down at ${EPOCHREALTIME}" >>"$d/events.txt"
    sleep "$up"
    softib link up softib0:1 >>"$d/events.txt" 2>&1
    echo "softib0:1 up at ${EPOCHREALTIME}" >>"$d/events.txt"
    chrt -o -p 0 $$
    kill -0 "$pid" 2>/dev/null
}

# The carrier's death in run directory D while the job PID runs (-c): the
# first lane's ports go down (every endpoint, busy or idle, sees it at
# once); when both ranks moved it and no lane failover came for 1 s, they
# come back and at once the second lane's go down, before the first lane
# can have been connected again (a few ms between; the rebuild takes more)
lammps_carrier_fault()
{
    local d=$1 pid=$2 t n last=-1 still=0

    lammps_fault_start "$d" "$pid" || return 1
    softib link down softib0:1 >>"$d/events.txt" 2>&1
    softib link down softib1:1 >>"$d/events.txt" 2>&1
    echo "softib0:1 softib1:1 down at ${EPOCHREALTIME}" >>"$d/events.txt"
    t=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < t && still < 20)); do
        sleep 0.05
        n=$(grep -c '"event":"lane_failover"' "$d/report.json")
        if ((n == last)) &&
           (($(sed -n 's/.*"event":"lane_failover","pid":\([0-9]*\),.*/\1/p' \
               "$d/report.json" | sort -u | wc -l) == 2)); then
            still=$((still + 1))
        else
            still=0 last=$n
        fi
    done
    softib link up softib0:1 >>"$d/events.txt" 2>&1
    softib link up softib1:1 >>"$d/events.txt" 2>&1
    softib link down softib0:2 >>"$d/events.txt" 2>&1
    softib link down softib1:2 >>"$d/events.txt" 2>&1
    echo "after $last lane failovers: softib0:1 softib1:1 up, softib0:2" \
         "softib1:2 down at ${EPOCHREALTIME}" >>"$d/events.txt"
    sleep "$up"
    softib link up softib0:2 >>"$d/events.txt" 2>&1
    softib link up softib1:2 >>"$d/events.txt" 2>&1
    echo "softib0:2 softib1:2 up at ${EPOCHREALTIME}" >>"$d/events.txt"
    chrt -o -p 0 $$
    kill -0 "$pid" 2>/dev/null
}

# What is wrong with the carrier run D's reports (nothing: empty)
lammps_carrier_wrong()
{
    local rep=$1/report.json n

    n=$(sed -n 's/.*"event":"lane_failover","pid":\([0-9]*\),.*"awaited_rebuild":true.*/\1/p' \
        "$rep" | sort -u | wc -l)
    ((n == 2)) ||
        echo "$n of 2 ranks moved a lane onto the lane connected again"
}

# What is wrong with the reports of run directory D (nothing: empty)
lammps_reports_wrong()
{
    local rep=$1/report.json pid lost

    for pid in $(sed -n 's/.*"event":"failover","pid":\([0-9]*\),.*/\1/p' \
                 "$rep" | sort -u); do
        grep -q "\"event\":\"failback\",\"pid\":$pid," "$rep" ||
            echo "pid $pid: no failback"
    done
    (($(grep -c '"event":"failover"' "$rep") >= 2)) ||
        echo "fewer than 2 failovers"
    lost=$(grep -o '"results_lost":[0-9]*' "$rep" |
           awk -F: '{ s += $2 } END { print s + 0 }')
    ((lost == 0)) || echo "$lost fetch results lost"
    # per endpoint: the standby's credits at its last re-protection against
    # the standby's before the grow
    awk '/"event":"grown"/ {
             match($0, /"pid":[0-9]+,"ep":"[^"]*"/)
             ep = substr($0, RSTART, RLENGTH)
             match($0, /"old_send_credits":[0-9]+/)
             short[ep] = substr($0, RSTART + 19, RLENGTH - 19) }
         /"event":"reprotected"/ {
             match($0, /"pid":[0-9]+,"ep":"[^"]*"/)
             ep = substr($0, RSTART, RLENGTH)
             match($0, /"send_credits":[0-9]+/)
             last[ep] = substr($0, RSTART + 15, RLENGTH - 15) }
         END {
             for (ep in short)
                 if (last[ep] != short[ep])
                     printf "%s: standby left with %s send credits, %s " \
                            "before the grow\n", ep, last[ep], short[ep] }' \
        "$rep"
}

# lammps_run NAME FAULT: one job; prints its line, 0 if it was OK
lammps_run()
{
    local name=$1 fault=$2 d=$logs/$1 pid rc start wrong
    local -a net=(-x UCX_NET_DEVICES=softib0:1)

    # -c: two lanes, both in every run (the clean one's results compare)
    ((carrier)) && net=(-x UCX_NET_DEVICES=softib0:1,softib0:2
                        -x UCX_MAX_EAGER_LANES=2 -x UCX_MAX_RNDV_LANES=2
                        -x UCX_UCP_FAILOVER_REBUILD_INTERVAL=60s)
    mkdir -p "$d"
    : >"$d/report.json"
    : >"$d/out.log"
    rc_varuna_softib_registry "lammps-$name"
    start=$SECONDS
    (cd "$d" && exec setsid softib run -- mpirun --allow-run-as-root \
        --oversubscribe -np 2 "${mpi_ucx_only[@]}" \
        -x UCX_TLS=rc_varuna,ud_verbs:aux "${net[@]}" \
        -x UCX_RC_VARUNA_STANDBY=auto -x UCX_LOG_LEVEL=info \
        -x OMP_NUM_THREADS=1 -x UCX_RC_VARUNA_REPORT="$d/report.json" \
        -x UCX_UCP_FAILOVER_REPORT="$d/report.json" \
        lmp -nocite -log "$d/log.lammps" -var nsteps "$steps" -in "$input" \
        >"$d/out.log" 2>&1 </dev/null) &
    pid=$!
    if ((fault && carrier)) && ! lammps_carrier_fault "$d" $pid; then
        echo "$name: WRONG: the job ended before the carrier's heal"
        return 1
    elif ((fault && !carrier)) && ! lammps_fault "$d" $pid; then
        echo "$name: WRONG: the job ended before the heal"
        return 1
    fi
    while kill -0 $pid 2>/dev/null && ((SECONDS - start < tmo)); do
        sleep 0.2
    done
    if kill -0 $pid 2>/dev/null; then
        mpi_kill_session $pid
        { wait $pid; } 2>/dev/null
        echo "$name: HANG (no end after $tmo s)"
        return 1
    fi
    { wait $pid; } 2>/dev/null
    rc=$?
    lammps_results "$d/log.lammps" >"$d/results.txt" 2>/dev/null
    if ((rc != 0)); then
        echo "$name: WRONG (exit $rc; $d/out.log)"
        return 1
    elif ! grep -q '^ *Step' "$d/results.txt"; then
        echo "$name: WRONG: no thermo output in $d/log.lammps"
        return 1
    elif ((!fault)); then
        echo "$name: OK, $(grep -c . "$d/results.txt") result lines," \
             "$((SECONDS - start)) s"
        return 0
    elif ! cmp -s "$logs/clean/results.txt" "$d/results.txt"; then
        echo "$name: WRONG: results differ from the run without a fault" \
             "(diff $logs/clean/results.txt $d/results.txt)"
        return 1
    fi
    if ((carrier)); then
        wrong=$(lammps_carrier_wrong "$d" | paste -sd';' -)
    else
        wrong=$(lammps_reports_wrong "$d" | paste -sd';' -)
    fi
    if [[ -n $wrong ]]; then
        echo "$name: WRONG: $wrong"
        return 1
    fi
    if ((carrier)); then
        echo "$name: OK, results identical; $(grep -c \
             '"event":"lane_failover"' "$d/report.json") lane failovers," \
             "$(grep -c '"awaited_rebuild":true' "$d/report.json") onto" \
             "the lane connected again as their own died, $(grep -c \
             '"event":"lane_restored"' "$d/report.json") lanes restored;" \
             "$((SECONDS - start)) s"
        return 0
    fi
    echo "$name: OK, results identical; $(grep -c '"event":"failover"' \
         "$d/report.json") failovers, $(grep -c '"event":"grown"' \
         "$d/report.json") grown, $(grep -c '"event":"failback"' \
         "$d/report.json") failbacks, standbys short again;" \
         "$((SECONDS - start)) s"
}

lammps_run clean 0 || rc_varuna_die "the run without a fault failed"
ok=0
for ((i = 1; i <= runs; i++)); do
    lammps_run fault-$i 1 && ((ok++))
done
echo "lammps: $ok of $runs runs through the fault OK (logs: $logs)"
((ok == runs))
