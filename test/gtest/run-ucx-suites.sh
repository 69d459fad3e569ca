#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Run a group of UCX's own gtest suites on softib: the filter is the group's
# suites for its gtest instance, minus every pattern of ucx-exclusions (next
# to this script). The gtest binary runs under "softib run", in a registry of
# its own, under a timeout. The full output goes to a log file; failures and
# gtest's summary are printed.
#
# Usage: test/gtest/run-ucx-suites.sh [-n] [-q] [-d DEVICES] GROUP [GTEST ARGS...]
#          -n          print the filter and the number of tests, run nothing
#          -q          quick: leave out the slow tests listed below (they
#                      pass; CI time is short)
#          -d DEVICES  the devices of the run's registry, as SOFTIB_DEVICES
#                      (default "softib0:2,softib1:2"); UCT tests run once
#                      per port, so "softib0:1" runs each once
#        test/gtest/run-ucx-suites.sh -l     list the groups
#
# Environment (". build/env.sh" sets the first two; else build/ next to this
# repository is used):
#   RC_VARUNA_UCX_BUILD  UCX's build tree (its test/gtest/gtest is run)
#   RC_VARUNA_PREFIX     our prefix (bin/softib; its lib/ is taken off the
#                        library path: the gtest binary uses the build tree's)
#   GTEST_TIMEOUT        seconds for the whole group (default 1800)
#   SOFTIB_DEVICES       as -d
#   UCX_SUITES_LOG       the log file (default build/logs/ucx-suites-GROUP.log)
# Exit status: gtest's (0 if every selected test passed), 124 on timeout.
#

set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
. "$RC_VARUNA_ROOT/test/gtest/lib.sh"
exclusions=$RC_VARUNA_ROOT/test/gtest/ucx-exclusions

# The suites, as gtest test-case names; a trailing * matches a family.
uct_suites="test_uct_ep uct_p2p_rma_test uct_p2p_am_test uct_amo_*
            uct_flush_test test_uct_pending test_uct_peer_failure"
ucp_suites="test_ucp_tag_* test_ucp_rma* test_ucp_atomic* test_ucp_am*"

# Groups: NAME, gtest instance (the part before "/"), suites. rc_varuna's
# groups run the same suites as rc_verbs' ("rcvar" is the UCP instance with
# "rc_varuna,ud_verbs:aux", contrib/ucx-patches/0003-*). The UCP groups add
# test_ucp_peer_failure (not its _keepalive variant): the error path an
# endpoint takes when its peer dies (DESIGN.md G5), run for rc_verbs too so
# the two compare like with like.
groups=(
    "rc_verbs-uct   rc_verbs   $uct_suites"
    "ud_verbs-uct   ud_verbs   $uct_suites"
    "rc_varuna-uct  rc_varuna  $uct_suites"
    "rc_v-ucp       rc         $ucp_suites test_ucp_peer_failure"
    "rcvar-ucp      rcvar      $ucp_suites test_ucp_peer_failure"
)

# Left out by -q, for any instance. These pass; they take three quarters of
# a UCP group's time (measured on 2 cores: about 410 of 540 s) and add no
# transport operation the rest does not use.
quick_skip=(
    # the unexpected-message variants: the same eager and rendezvous
    # transfers as the expected ones, through UCP's unexpected queue;
    # 290 s
    "*/test_ucp_tag_xfer.*unexp*"
    # messages of up to hundreds of MB, mostly page faults; 100 s
    "*/test_ucp_tag_match_rndv.exp_huge_mix/*"
    # UCP's tag matching speed, not the transport's; 20 s
    "*/test_ucp_tag_perf.*"
    # in the rc_verbs control group only: UCP's active-message data types
    # (contiguous, iov, generic) over plain rc, 46 s; our UCP patches do
    # not reach that code, and the rcvar group runs it over rc_varuna
    "rc/test_ucp_am_nbx_dts.*"
)


# The group's line, split: sets instance and suites.
find_group()
{
    local line words

    for line in "${groups[@]}"; do
        read -r -d '' -a words <<<"$line"
        if [[ ${words[0]} == "$1" ]]; then
            instance=${words[1]}
            suites=("${words[@]:2}")
            return 0
        fi
    done
    return 1
}

# Patterns of ucx-exclusions, ":"-separated: "PATTERN  # reason" lines.
exclusion_patterns()
{
    local line pattern out=

    [[ -r $exclusions ]] || return 0
    while IFS= read -r line || [[ -n $line ]]; do
        pattern=${line%%#*}
        pattern=${pattern//[[:space:]]/}
        [[ -n $pattern ]] && out=${out:+$out:}$pattern
    done <"$exclusions"
    echo "$out"
}

build_filter()
{
    local s pos='' neg

    for s in "${suites[@]}"; do
        [[ $s == *'*' ]] || s="$s.*"
        pos=${pos:+$pos:}$instance/$s
    done
    neg=$(exclusion_patterns)
    if ((quick)); then
        neg=${neg:+$neg:}$(IFS=:; echo "${quick_skip[*]}")
    fi
    echo "$pos${neg:+-$neg}"
}

list_only=0
quick=0
while getopts "d:lnq" opt; do
    case $opt in
    d) export SOFTIB_DEVICES=$OPTARG ;;
    l) for g in "${groups[@]}"; do echo "${g%% *}"; done; exit 0 ;;
    n) list_only=1 ;;
    q) quick=1 ;;
    *) rc_varuna_usage '^# Exit' ;;
    esac
done
shift $((OPTIND - 1))
(($# >= 1)) || rc_varuna_usage '^# Exit'
group=$1
shift
find_group "$group" || { echo "unknown group '$group' (-l lists them)" >&2
                         exit 2; }

log=${UCX_SUITES_LOG:-$RC_VARUNA_LOGS/ucx-suites-$group.log}
filter=$(build_filter)

# the registry of its own is created with the devices of -d (SOFTIB_DEVICES)
gtest_softib_setup gtest gtest-$group

if ((list_only)); then
    echo "filter: $filter"
    "$gtest_softib" run -- "$gtest_bin" --gtest_list_tests \
        --gtest_filter="$filter" |
        grep -c '^  ' | sed 's/$/ tests/'
    exit 0
fi

mkdir -p "$(dirname "$log")"
echo "$group: gtest --gtest_filter=$filter $*"
echo "$group: full output in $log"
start=$SECONDS
gtest_softib_run "${GTEST_TIMEOUT:-1800}" "$gtest_bin" \
    --gtest_filter="$filter" "$@" >"$log" 2>&1 &
pid=$!
# Failures as they happen
tail -n +1 --pid="$pid" -f "$log" 2>/dev/null |
    grep --line-buffered -E '^\[  FAILED  \] [^ ]+/[^ ]+\.' &
wait "$pid"
status=$?
wait

if ((status == 124)); then
    echo "$group: TIMEOUT after ${GTEST_TIMEOUT:-1800} s, in:" \
         "$(grep '^\[ RUN      \]' "$log" | tail -n 1)"
elif grep -q '^\[==========\] .* ran\.' "$log"; then
    # gtest's summary: from its "tests ran" line to the end
    sed -n '/^\[==========\] .* ran\./,$p' "$log"
else
    echo "$group: gtest did not finish; the end of its output:"
    tail -n 40 "$log"
fi
# UCX's own cases skip where a transport lacks a capability (counted, not
# failed); a group where no test ran fails
bash "$RC_VARUNA_ROOT/test/gtest/gtest-verdict.sh" "$log" '.*' |
    sed "s/^gtest-verdict: \([0-9]* tests ran, [0-9]* skipped\):.*/gtest-verdict: \1/"
((PIPESTATUS[0] == 0)) || ((status != 0)) || status=1
echo "$group: exit $status, $((SECONDS - start)) s"
exit "$status"
