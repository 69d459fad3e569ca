#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# Blanket recovery caught executing operations twice: test/bidir/run.sh
# under blanket recovery (-b), one run at a time, until a run shows the
# duplicate itself. Blanket recovery resends what was in flight, executed
# or not; caught means the duplicate itself: a message delivered twice, or
# a counter above its number of fetch-adds; any other failure (a crash, a
# hang, a missing report) is no proof and does not count. With run.sh's -L
# the client's link loses its responses, both ways, for 30 ms before each
# failure, so executed operations are in flight; still, in about 1 run in
# 10 nothing executed is in flight at the failure, or the second failure
# ends the endpoints first (NEWS.md), so up to TRIES runs, each judged on
# its own evidence.
#
# Usage: test/bidir/blanket.sh TRIES [RUN.SH OPTIONS...]
#   e.g. test/bidir/blanket.sh 3 -c 2 -e 3 -L -t 60
#
# Each run is "test/bidir/run.sh RUN.SH OPTIONS -r 1 -b -n blanket-K", its
# logs in build/logs/bidir/blanket-K. Exit 0 when a run caught a duplicate;
# 1 when none did, or a run hung. make check runs it from
# test/check/bidir.sh.
#

set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../contrib/common.sh"
run=$RC_VARUNA_ROOT/test/bidir/run.sh

tries=${1:-}
[[ $tries =~ ^[1-9][0-9]*$ ]] || rc_varuna_usage
shift

for ((k = 1; k <= tries; k++)); do
    out=$(bash "$run" "$@" -r 1 -b -n blanket-$k)
    grep -v ' passed, ' <<<"$out"
    if grep -q '^run [0-9]*: HANG' <<<"$out"; then
        echo "bidir: blanket recovery hung"
        break
    fi
    logs=$RC_VARUNA_LOGS/bidir/blanket-$k/run1
    dups=$(sed -n 's/.*WRONG: .* \([0-9]*\) duplicates,.*/\1/p' \
           "$logs"/client*.log "$logs/server.log" 2>/dev/null |
           awk '{ s += $1 } END { print s + 0 }')
    over=$(sed -n 's/^varuna_bidir: counter [0-9]* is \([0-9]*\) after \([0-9]*\) fetch-adds$/\1 \2/p' \
           "$logs"/client*.log "$logs/server.log" 2>/dev/null |
           awk '$1 > $2 { n++ } END { print n + 0 }')
    if ((dups > 0 || over > 0)); then
        echo "bidir: blanket recovery caught executing twice in run $k" \
             "($dups duplicate messages, $over counters above their" \
             "fetch-adds)"
        exit 0
    fi
done
echo "bidir: blanket recovery was not caught executing twice (no" \
     "duplicate message, no counter above its fetch-adds)"
exit 1
