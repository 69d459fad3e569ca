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

# blanket recovery resends what executed: every run must end WRONG (a
# duplicate fetch-add or message), none may hang or pass
out=$(bash "$run" -r 2 -c 1 -p -b -t 60 -n blanket)
grep -v ' passed, ' <<<"$out"
wrong=$(grep -c '^run [0-9]*: WRONG' <<<"$out")
if ((wrong != 2)); then
    echo "bidir: blanket recovery was not caught executing twice" \
         "($wrong of 2 runs WRONG)"
    status=1
else
    echo "bidir: blanket recovery caught executing twice in 2 of 2 runs"
fi

echo "bidir: exit $status"
exit $status
