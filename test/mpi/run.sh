#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# An MPI job through a link failure (issues 13 and 14): Debian's Open MPI
# (openmpi-bin, libopenmpi-dev) with our UCX first on LD_LIBRARY_PATH, on
# softib, over UCX_TLS=rc_varuna,ud_verbs:aux. Builds test/mpi/bidir_failover.c
# with mpicc and runs it R times: each iteration every rank does a verified
# MPI_Alltoall (pml ucx) and an MPI_Fetch_and_op(+1) with MPI_Win_flush on
# another rank's counter (osc ucx); rank 0 takes softib0:1 down halfway.
# With --rma also a verified MPI_Allreduce, MPI_Put, MPI_Accumulate,
# MPI_Compare_and_swap and MPI_Get each iteration (bidir_failover -R).
#
# Usage: test/mpi/run.sh [-n RANKS] [-r RUNS] [-i ITERS] [-t SECONDS]
#                        [-s BYTES] [-S BYTES] [-w SECONDS] [--no-fail]
#                        [--rma|--alltoall] [--double|--all-paths]
#                        [--recovery varuna|blanket]
#                        [--expect ok|wrong|twice] [--standby auto|same]
#                        [-x VAR=VALUE]... [--bt] [--name NAME]
#        test/mpi/run.sh --build   only build the program; print its path
#   -n   ranks (2)                   -r   runs (1)
#   -i   iterations per run (4000)   -t   per-run timeout: HANG after it (60)
#   -s   alltoall bytes per destination (8: eager)
#   -S   every 8th iteration uses this size instead (e.g. 65536: rendezvous)
#   -w   every rank idles this long at the failure, progressing (the link
#        stays down: issue 9's long run is -w 120 -t 300)
#   --no-fail    a clean run: the link stays up (no reports expected)
#   --rma        the rest of MPI's one-sided operations and an allreduce
#   --alltoall   the alltoall only: no window (pml ucx's endpoints alone)
#   --all-paths  as --double, but every path dies (softib0:1, softib1:1,
#                softib0:2, softib1:2): the job must end with UCX's error,
#                not hang (implies --expect wrong)
#   --double     two UCP lanes (UCX_NET_DEVICES=softib0:1,softib0:2, their
#                standbys on softib1), and both paths of the first die
#                (softib0:1 and softib1:1): UCP's lane failover must move
#                its traffic to the other lane (issue 35); a run also
#                needs a "lane_failover" report (UCX_UCP_FAILOVER_REPORT)
#   --recovery   UCX_RC_VARUNA_RECOVERY (blanket: see --expect twice)
#   --expect     ok (default); wrong: a run counts as correct when it
#                comes out WRONG (--all-paths; a HANG never does); twice:
#                when its output shows an operation executed twice
#                (test/mpi/lib.sh, mpi_duplicate_evidence: a counter or sum
#                above what was added, a fetch result seen twice, UCP's
#                assertion on a reply to an operation already answered),
#                for blanket recovery
#   --standby    UCX_RC_VARUNA_STANDBY (auto: softib1:1; same: softib0:2)
#   -x VAR=VAL   one more variable for every rank (e.g. UCX_RC_VARUNA_LOG=n)
#   --bt         on a hang, gdb backtraces of every rank (bt-PID.txt)
#   --name       logs go to build/logs/mpi/NAME (default: from the options)
#
# A run is OK when it exits 0 within the timeout with one OK verdict per
# rank and the closing "bidir_failover: OK" (every alltoall element right,
# every counter equal to the adds aimed at it, the fetch results of each
# target exactly 0..adds-1) in the file the ranks write their verdicts to
# (VARUNA_VERDICT_FILE, the run's verdicts: a rank whose verdict is missing
# or WRONG is named), and, with a link failure, every rank wrote failover
# reports (UCX_RC_VARUNA_REPORT) with no lost result; WRONG otherwise; HANG
# when it did not end within the timeout (it is then killed). Prints one
# line per run and "mpi: N runs: C correct, W wrong, H hang"; exits 0 only
# if every run was OK. UCX's log (UCX_LOG_LEVEL, default info: the
# failover lines) is in each run's out.log, softib's counters (taken every
# 0.2 s while the job runs) in counters.txt.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ranks=2 runs=1 iters=4000 tmo=60 small=8 large=0 idle=0 fail=1 recovery=varuna
standby=auto bt=0 name= extra_env=() build_only=0 rma=0 expect=ok double=0
alltoall=0 all_paths=0
while (($#)); do
    [[ $1 == --no-fail || $1 == --bt || $1 == --build || $1 == --rma ||
       $1 == --double || $1 == --alltoall || $1 == --all-paths ||
       $# -ge 2 ]] || rc_varuna_usage
    case $1 in
    -n) ranks=$2; shift ;;
    -r) runs=$2; shift ;;
    -i) iters=$2; shift ;;
    -t) tmo=$2; shift ;;
    -s) small=$2; shift ;;
    -S) large=$2; shift ;;
    -w) idle=$2; shift ;;
    -x) [[ $2 == *=* ]] || rc_varuna_usage; extra_env+=("$2"); shift ;;
    --no-fail) fail=0 ;;
    --rma) rma=1 ;;
    --double) double=1 ;;
    --alltoall) alltoall=1 ;;
    --all-paths) double=1 all_paths=1 expect=wrong ;;
    --expect) expect=$2; shift ;;
    --recovery) recovery=$2; shift ;;
    --standby) standby=$2; shift ;;
    --bt) bt=1 ;;
    --build) build_only=1 ;;
    --name) name=$2; shift ;;
    *) rc_varuna_usage ;;
    esac
    shift || rc_varuna_usage
done
[[ $recovery == varuna || $recovery == blanket ]] ||
    rc_varuna_die "--recovery: varuna or blanket, not '$recovery'"
[[ $standby == auto || $standby == same ]] ||
    rc_varuna_die "--standby: auto or same, not '$standby'"
[[ $expect == ok || $expect == wrong || $expect == twice ]] ||
    rc_varuna_die "--expect: ok, wrong or twice, not '$expect'"
((double)) && [[ $standby == same ]] &&
    rc_varuna_die "--double takes softib0:1 and its standby down: with" \
                  "--standby same that is softib0:2, the other lane too"

mpi_setup mpicc mpirun
# the program, rebuilt when its source changed
prog=$(mpi_build mpicc bidir_failover) || exit 1
((build_only)) && { echo "$prog"; exit 0; }

if [[ -z $name ]]; then
    name=n$ranks-$standby-$recovery
    ((large)) && name+=-S$large
    ((rma)) && name+=-rma
    ((alltoall)) && name+=-alltoall
    ((fail)) || name+=-nofail
    ((double)) && name+=-double
    ((all_paths)) && name+=-all-paths
fi
logs=$RC_VARUNA_LOGS/mpi/$name
mkdir -p "$logs"

prog_args=(-q -i "$iters" -s "$small" -S "$large" -w "$idle")
((fail)) || prog_args+=(-f -1)
((rma)) && prog_args+=(-R)
((alltoall)) && prog_args+=(-A)
# both paths of the first lane: rc_varuna fails over to the standby, which
# dies too, and UCP's lane failover moves the traffic to the other lane
if ((all_paths)); then
    prog_args+=(-d softib0:1,softib1:1,softib0:2,softib1:2)
elif ((double)); then
    prog_args+=(-d softib0:1,softib1:1)
fi

mpirun_args=(--allow-run-as-root --oversubscribe -np "$ranks"
             "${mpi_ucx_only[@]}")
ucx_env=(UCX_TLS=rc_varuna,ud_verbs:aux UCX_NET_DEVICES=softib0:1
         UCX_RC_VARUNA_STANDBY=$standby UCX_RC_VARUNA_RECOVERY=$recovery
         UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-info})
# two UCP lanes (softib0:1 and softib0:2, their standbys on softib1)
((double)) && ucx_env+=(UCX_NET_DEVICES=softib0:1,softib0:2
                        UCX_MAX_EAGER_LANES=2 UCX_MAX_RNDV_LANES=2)
ucx_env+=("${extra_env[@]}")
for var in "${ucx_env[@]}"; do
    mpirun_args+=(-x "$var")
done

# backtraces of every rank of a hung run, and where each one was
mpi_backtraces()
{
    local d=$1 sid=$2 pid pids

    command -v gdb >/dev/null || { echo "    (no gdb for backtraces)"; return; }
    # stop them all first: a rank held in the debugger while the others
    # run would make them fail over (rc_varuna's watchdog) or abort
    pids=$(ps -o pid=,comm= -s "$sid" | awk '$2 ~ /^bidir_failove/ {print $1}')
    kill -STOP $pids 2>/dev/null
    for pid in $pids; do
        gdb -p "$pid" -batch -ex 'print rank' -ex 'print bf_iteration' \
            -ex 'print bf_phase' -ex 'thread apply all bt' \
            >"$d/bt-$pid.txt" 2>&1
        echo "    pid $pid: rank $(sed -n 's/^\$1 = //p' "$d/bt-$pid.txt")," \
             "iteration $(sed -n 's/^\$2 = //p' "$d/bt-$pid.txt")," \
             "phase $(sed -n 's/^\$3 = //p' "$d/bt-$pid.txt"):" \
             "$(grep -o -E 'in (mca_pml_ucx_[a-z_]+|ompi_osc_ucx_[a-z_]+|MPI_[A-Za-z_]+|PMPI_[A-Za-z_]+) ' \
                "$d/bt-$pid.txt" | awk '{print $2}' | uniq | paste -sd' ')"
    done
}

# one run; prints its verdict line, returns 0 if it was OK
mpi_run()
{
    local n=$1 d=$logs/run$1 pid start rc verdict reports pids p missing
    local lost why lane_reports event evidence whos r verdict_problems

    rm -rf "$d"
    mkdir -p "$d"
    : >"$d/report.json"
    : >"$d/verdicts"
    # a fabric of our own, new for each run (its counters start at 0):
    # the link we take down is no one else's
    rc_varuna_softib_registry mpi-$n
    start=$SECONDS

    setsid softib run -- mpirun "${mpirun_args[@]}" \
        -x UCX_RC_VARUNA_REPORT="$d/report.json" \
        -x UCX_UCP_FAILOVER_REPORT="$d/report.json" \
        -x VARUNA_VERDICT_FILE="$d/verdicts" "$prog" "${prog_args[@]}" \
        >"$d/out.log" 2>&1 </dev/null &
    pid=$!
    # softib's counters (retransmissions, RNR NAKs, retries exceeded) are
    # those of the contexts alive: the last look before the end is kept
    while kill -0 $pid 2>/dev/null && ((SECONDS - start < tmo)); do
        softib counters >"$d/counters.tmp" 2>/dev/null &&
            grep -q -v ' 0$' "$d/counters.tmp" &&
            mv "$d/counters.tmp" "$d/counters.txt"
        sleep 0.2
    done
    rm -f "$d/counters.tmp"

    if kill -0 $pid 2>/dev/null; then
        verdict="HANG (no end after $tmo s)"
        ((bt)) && mpi_backtraces "$d" $pid >"$d/hang.txt"
        # mpirun and the ranks (each in a process group of its own) are the
        # session that setsid started
        mpi_kill_session $pid
        { wait $pid; } 2>/dev/null
        rc=hang
    else
        { wait $pid; } 2>/dev/null
        rc=$?
    fi

    reports=$(grep -c '"event":"failover"' "$d/report.json")
    lane_reports=$(grep -c '"event":"lane_failover"' "$d/report.json")
    lost=$(grep '"event":"failover"' "$d/report.json" |
           grep -o '"results_lost":[0-9]*' |
           awk -F: '{s += $2} END {print s + 0}')
    # every rank's verdict and rank 0's closing one, from the file they
    # wrote them to (src/tools/varuna_verdict.h): what is wrong or missing
    # there, one rank a line
    whos=()
    for ((r = 0; r < ranks; r++)); do
        whos+=("rank $r")
    done
    verdict_problems=$(rc_varuna_verdicts "$d/verdicts" "${whos[@]}" \
                       bidir_failover | cut -c1-160 | paste -sd';' -)
    missing=0
    if ((fail)); then
        pids=$(sed -n -E 's/^rank [0-9]+ \(pid ([0-9]+)\):.*/\1/p' \
               "$d/verdicts")
        # each rank's own report: of its failover, or with --double of
        # its lane failover (both paths of the lane may die at once, and
        # rc_varuna's failover then never completes)
        event=failover
        ((double)) && event=lane_failover
        for p in $pids; do
            grep -q "{\"event\":\"$event\",\"pid\":$p," "$d/report.json" ||
                ((missing++))
        done
    fi

    if [[ $rc == hang ]]; then
        :
    elif ((rc != 0)); then
        # the first fatal line of UCX or Open MPI, if any
        why=$(grep -m1 -o -E '[A-Za-z ]+, no path left to the peer|Assertion .*|UCX  ERROR .*|MPI_ERR[A-Z_]*' \
              "$d/out.log" | cut -c1-100)
        verdict="WRONG (exit $rc${why:+: $why})${verdict_problems:+; $verdict_problems}"
    elif [[ -n $verdict_problems ]]; then
        verdict="WRONG: $verdict_problems"
    elif ((fail && (reports + lane_reports == 0 || missing > 0))); then
        verdict="WRONG: $missing of $ranks ranks without a failover report"
    elif ((lost > 0)); then
        verdict="WRONG: $lost fetch results lost in the failovers"
    else
        verdict=OK
    fi
    rm -f "$SOFTIB_REGISTRY"
    echo "run $n: $verdict; $((SECONDS - start)) s; $reports failover" \
         "reports, $lane_reports lane failovers"
    [[ -f $d/hang.txt ]] && cat "$d/hang.txt"
    [[ $rc == hang ]] && return 2
    if [[ $expect == twice ]]; then
        evidence=$(mpi_duplicate_evidence "$d/out.log" "$d/verdicts") ||
            return 1
        echo "run $n: executed twice: $evidence"
        return 0
    elif [[ $expect == wrong ]]; then
        [[ $verdict == WRONG* ]] && return 0
        return 1
    fi
    [[ $verdict == OK ]] && return 0
    return 1
}

correct=0 wrong=0 hang=0
sizes="alltoall $small B"
((large)) && sizes+=" (every 8th: $large B)"
what="no link failure"
((fail)) && what="softib0:1 down halfway"
((fail && double)) && what="softib0:1 and its standby softib1:1 down halfway (two lanes)"
((fail && all_paths)) && what="every path (softib0:1 and 0:2, their standbys softib1:1 and 1:2) down halfway"
((rma)) && sizes+=", all one-sided operations and an allreduce"
echo "mpi: $runs runs of $ranks ranks, $iters iterations, $sizes, $what," \
     "standby $standby, $recovery recovery; logs in ${logs#$RC_VARUNA_ROOT/}"
for ((n = 1; n <= runs; n++)); do
    mpi_run $n
    case $? in
    0) ((correct++)) ;;
    2) ((hang++)) ;;
    *) ((wrong++)) ;;
    esac
done
if [[ $expect == twice ]]; then
    echo "mpi: $runs runs: $correct showed an operation executed twice," \
         "$wrong did not, $hang hang"
elif [[ $expect == wrong ]]; then
    echo "mpi: $runs runs: $correct came out wrong as expected," \
         "$wrong did not, $hang hang"
else
    echo "mpi: $runs runs: $correct correct, $wrong wrong, $hang hang"
fi
((correct == runs))
