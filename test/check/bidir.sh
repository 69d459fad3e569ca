#!/bin/bash
#
# Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
# See file LICENSE for terms.
#
# make check: traffic in both directions through repeated link failures
# (test/bidir/run.sh, issue 14). The first selection is the one that hung
# every run before the fix of the drain (eager messages only, the client
# pausing at each failure so that everything in flight is acknowledged,
# four failures with re-protection in between); the others add rendezvous
# and failures under traffic, the other standby configuration, and blanket
# recovery, which must be caught executing operations twice.
#

set -uo pipefail
run=$(dirname "${BASH_SOURCE[0]}")/../bidir/run.sh
status=0

bash "$run" -r 3 -c 4 -p -a "-S 64" -t 60 -n eager-paused || status=1
bash "$run" -r 2 -c 2 -e 3 -t 60 -n mixed || status=1
bash "$run" -r 2 -c 4 -p -a "-S 64" -s same -t 60 -n same-eager-paused ||
    status=1

# blanket recovery resends what was in flight, executed or not: it must be
# caught executing twice (a duplicate fetch-add or message). With the
# failures under traffic (-e 3): when the client pauses at each failure,
# everything is acknowledged and, since an operation on an idle endpoint
# is signaled, completed: blanket then has nothing executed to resend. In
# flight at a failure under traffic there is an executed operation in
# about two runs of three: one of up to five runs must come out WRONG,
# none may hang
caught=0
for k in 1 2 3 4 5; do
    out=$(bash "$run" -r 1 -c 2 -e 3 -b -t 60 -n blanket-$k)
    grep -v ' passed, ' <<<"$out"
    if grep -q '^run [0-9]*: HANG' <<<"$out"; then
        status=1
        break
    fi
    if grep -q '^run [0-9]*: WRONG' <<<"$out"; then
        caught=$k
        break
    fi
done
if ((caught == 0)); then
    echo "bidir: blanket recovery was not caught executing twice"
    status=1
else
    echo "bidir: blanket recovery caught executing twice in run $caught"
fi

echo "bidir: exit $status"
exit $status
