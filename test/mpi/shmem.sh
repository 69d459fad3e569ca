#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# OpenSHMEM through a link failure (issue 13): Debian's Open MPI (spml ucx)
# with our UCX first on LD_LIBRARY_PATH, on softib, over
# UCX_TLS=rc_varuna,ud_verbs:aux, with contrib/openmpi/mca-params.conf.
# Builds test/mpi/shmem_failover.c with oshcc and runs it once: fetch-adds,
# puts read back with gets, PE 0 takes softib0:1 down halfway.
#
# Usage: test/mpi/shmem.sh [-n PES] [-i ITERS] [-t SECONDS] [--no-fail]
#                          [--double] [-L MS] [--recovery varuna|blanket]
#                          [--expect ok|again]
#                          [-x VAR=VALUE]... [--name NAME]
#        test/mpi/shmem.sh --build   only build the program; print its path
#   -n   PEs (2)      -i   iterations (2000)     -t   timeout: HANG (60)
#   --no-fail    the link stays up (no failover reports expected)
#   --double     UCX_NET_DEVICES=softib0:1,softib0:2 (their standbys on
#                softib1), and both paths of the first lane die (softib0:1
#                and softib1:1): the endpoints' spare lane on softib0:2
#                (UCX_UCP_FAILOVER_SPARE_LANE) takes the traffic through
#                UCP's lane failover (issue 32); a "lane_failover" report
#                from every PE is needed (rc_varuna's own failover reports
#                come only where the standby died after the failover began)
#   -L MS        the link loses every response for MS ms before it goes
#                down: what is sent meanwhile executes unconfirmed (blanket
#                recovery then sends it again)
#   --recovery   UCX_RC_VARUNA_RECOVERY
#   --expect     ok (default), or again: the job's output must show a
#                message delivered again (test/mpi/lib.sh,
#                mpi_duplicate_evidence): an add executed twice, UCP's
#                assertion on a reply to an operation already answered, or
#                a PE's "barriers ended early" with its counter right in
#                the end (so no add was lost); rc_varuna's own count of
#                messages out of sequence (am_unordered) is printed, not
#                judged
#   -x VAR=VAL   one more variable for every PE
#
# A run is OK when it exits 0 within the timeout with one "pe N: OK" verdict
# per PE and "shmem_failover: OK" in the file the PEs write their verdicts
# to (VARUNA_VERDICT_FILE: verdicts; a PE whose verdict is missing or WRONG
# is named), and, with a link failure, failover reports from every PE;
# WRONG otherwise; HANG after the timeout. Exits 0 when the verdict is the
# expected one. Logs in build/logs/shmem/NAME/.
#
# Open MPI 4.1.4's own exit crash: spml ucx registers a memory-release hook
# at shmem_init and never removes it; shmem_finalize unloads mca_spml_ucx,
# and when osc rdma then frees memory in MPI's finalize the hook jumps into
# the unloaded library (SIGSEGV after every PE printed its results). With
# osc = ucx (mca-params.conf) osc rdma is not loaded and the job exits
# cleanly; docs/openmpi.md, "Known Open MPI issues".
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pes=2 iters=2000 tmo=60 fail=1 recovery=varuna expect=ok name= extra_env=()
loss_ms=0 build_only=0
double=0 devices=softib0:1
while (($#)); do
    [[ $1 == --no-fail || $1 == --double || $1 == --build || $# -ge 2 ]] ||
        rc_varuna_usage
    case $1 in
    -n) pes=$2; shift ;;
    -i) iters=$2; shift ;;
    -t) tmo=$2; shift ;;
    -L) loss_ms=$2; shift ;;
    --no-fail) fail=0 ;;
    --double) double=1 devices=softib0:1,softib0:2 ;;
    --build) build_only=1 ;;
    --recovery) recovery=$2; shift ;;
    --expect) expect=$2; shift ;;
    --name) name=$2; shift ;;
    -x) [[ $2 == *=* ]] || rc_varuna_usage; extra_env+=(-x "$2"); shift ;;
    *) rc_varuna_usage ;;
    esac
    shift || rc_varuna_usage
done
[[ $recovery == varuna || $recovery == blanket ]] ||
    rc_varuna_die "--recovery: varuna or blanket, not '$recovery'"
[[ $expect == ok || $expect == again ]] ||
    rc_varuna_die "--expect: ok or again, not '$expect'"

mpi_setup oshcc oshrun
prog=$(mpi_build oshcc shmem_failover) || exit 1
if ((build_only)); then
    echo "$prog"
    exit 0
fi

[[ -n $name ]] ||
    name=n$pes-$recovery$( ((fail)) || echo -nofail)$( ((double)) && echo -double)$( ((loss_ms)) && echo -L$loss_ms)
d=$RC_VARUNA_LOGS/shmem/$name
rm -rf "$d"
mkdir -p "$d"
: >"$d/report.json"
: >"$d/verdicts"
rc_varuna_softib_registry shmem

prog_args=(-i "$iters")
((fail)) || prog_args+=(-f -1)
((double)) && prog_args+=(-d softib0:1,softib1:1)
((loss_ms)) && prog_args+=(-L "$loss_ms")
start=$SECONDS
timeout --kill-after=10 "$tmo" \
    softib run -- oshrun --allow-run-as-root --oversubscribe -np "$pes" \
    --tune "$RC_VARUNA_ROOT/contrib/openmpi/mca-params.conf" \
    -x UCX_TLS=rc_varuna,ud_verbs:aux -x UCX_NET_DEVICES=$devices \
    -x UCX_RC_VARUNA_RECOVERY="$recovery" \
    -x UCX_RC_VARUNA_REPORT="$d/report.json" \
    -x UCX_UCP_FAILOVER_REPORT="$d/report.json" \
    -x VARUNA_VERDICT_FILE="$d/verdicts" \
    -x UCX_LOG_LEVEL="${UCX_LOG_LEVEL:-info}" -x LD_LIBRARY_PATH \
    "${extra_env[@]}" \
    "$prog" "${prog_args[@]}" >"$d/out.log" 2>&1 </dev/null
rc=$?

# every PE's verdict and PE 0's closing one, from the file they wrote them
# to (src/tools/varuna_verdict.h): what is wrong or missing there
whos=()
for ((pe = 0; pe < pes; pe++)); do
    whos+=("pe $pe")
done
verdict_problems=$(rc_varuna_verdicts "$d/verdicts" "${whos[@]}" \
                   shmem_failover | cut -c1-160 | paste -sd';' -)
reports=$(grep -c '"event":"failover"' "$d/report.json")
pids_reporting=$(grep '"event":"failover"' "$d/report.json" |
                 grep -o '"pid":[0-9]*' | sort -u | wc -l)
lane_pids=$(grep '"event":"lane_failover"' "$d/report.json" |
            grep -o '"pid":[0-9]*' | sort -u | wc -l)
if ((rc == 124 || rc == 137)); then
    verdict="HANG (no end after $tmo s)"
elif ((rc == 0)) && [[ -z $verdict_problems ]] &&
     { ((!fail)) || ((double)) || ((pids_reporting == pes)); } &&
     { ((!double)) || ((lane_pids == pes)); } &&
     { ((fail)) || ((reports == 0)); }; then
    verdict=OK
else
    verdict="WRONG (exit $rc, failover reports from $pids_reporting PEs, lane"
    verdict+=" failovers from $lane_pids)${verdict_problems:+: $verdict_problems}"
fi
# the receivers' counts (totals lines): duplicates dropped under varuna
# recovery, messages delivered again or early under blanket
sum_counter()
{
    grep -o "\"$1\":[0-9]*" "$d/report.json" |
        awk -F: '{ s += $2 } END { print s + 0 }'
}
echo "shmem $name: $verdict; $((SECONDS - start)) s; $reports failover" \
     "reports; active messages: $(sum_counter am_dropped) dropped," \
     "$(sum_counter am_unordered) out of sequence"

if [[ $expect == ok ]]; then
    [[ $verdict == OK ]]
else
    # the job's own evidence, not rc_varuna's counters
    evidence=$(mpi_duplicate_evidence "$d/out.log" "$d/verdicts" \
               "^pe [0-9]+: WRONG: (.*; )?[0-9]+ barriers ended early .*, counter $iters in the end\$") ||
        { echo "shmem $name: no message delivered again"; exit 1; }
    echo "shmem $name: a message delivered again: $evidence"
fi
